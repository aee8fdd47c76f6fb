// sg2 test tool: runs a command and writes its exit status and peak resident memory to a file.
//
//   sg2_peak_rss REPORT_FILE PROGRAM [ARGS...]
//
// REPORT_FILE receives one line, "STATUS MAX_RSS_KIB" (STATUS: the exit status, or 128 + the signal).
// Why a separate program: Linux carries a process's peak resident size (ru_maxrss) across exec, and a
// program spawned from the test process (posix_spawn shares its memory until the exec) starts with the
// test process's own peak — a test that ran a large case before would be measured, not the command.
// This tool is small; the command runs in a fork of it, so its ru_maxrss is its own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sg2_peak_rss REPORT_FILE PROGRAM [ARGS...]\n");
    return 125;
  }
  const pid_t pid = fork();
  if (pid < 0) return 125;
  if (pid == 0) {
    execv(argv[2], argv + 2);
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  if (wait4(pid, &status, 0, &ru) != pid) return 125;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) return 125;
  std::fprintf(f, "%d %ld\n", code, ru.ru_maxrss);
  return std::fclose(f) == 0 ? 0 : 125;
}
