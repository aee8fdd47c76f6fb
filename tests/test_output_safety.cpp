// Where sg2 writes (issue 15, from the second hostile-input review): only regular files are ever
// replaced; a temporary file is created new, never through a link or into a planted file; an
// archive over an existing folder fails before any work; a failed write to stdout fails the run;
// text from the command line, the environment and ffmpeg is escaped; an interrupt also ends ffmpeg
// and removes its half video; the video holds exactly this run's frames.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "test_cli_run.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

mode_t lstat_mode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

/// A shell script standing in for ffmpeg: records its arguments and pid, creates the output file
/// (its last argument, after "file:"), then runs `tail` (a shell command).
std::string fake_ffmpeg(const std::string& dir, const std::string& tail) {
  const std::string bin = dir + "/bin";
  ::mkdir(bin.c_str(), 0755);
  write_text(bin + "/ffmpeg", "#!/bin/sh\necho \"$@\" > " + dir + "/ffmpeg.args\necho $$ > " + dir +
                                  "/ffmpeg.pid.tmp\nmv " + dir + "/ffmpeg.pid.tmp " + dir +
                                  "/ffmpeg.pid\nfor last; do :; done\n: > \"${last#file:}\"\n" + tail + "\n");
  ::chmod((bin + "/ffmpeg").c_str(), 0755);
  return bin;
}

bool has_control_bytes(const std::string& s) {
  for (char c : s)
    if (c == '\x1b' || c == '\x07') return true;
  return false;
}

}  // namespace

TEST(OutputSafety, OnlyRegularFilesAreReplaced) {
  const std::string dir = temp_dir("nonregular");
  const std::string pkl = source_path("tests/data/checkpoints/ada_base16.pkl");
  // A FIFO: refused (it is not opened: no hang), and still a FIFO.
  const std::string fifo = dir + "/fifo.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  CliResult r = run_cli({"convert", pkl, fifo});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("fifo.safetensors: cannot write: it exists and is a FIFO, not a regular file"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(S_ISFIFO(lstat_mode(fifo)));
  // A symbolic link: refused, the link and its target untouched.
  write_text(dir + "/target.txt", "keep");
  const std::string link = dir + "/link.safetensors";
  ASSERT_EQ(::symlink((dir + "/target.txt").c_str(), link.c_str()), 0);
  r = run_cli({"convert", pkl, link});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("link.safetensors: cannot write: it exists and is a symbolic link"), std::string::npos) << r.err;
  EXPECT_TRUE(S_ISLNK(lstat_mode(link)));
  EXPECT_EQ(slurp(dir + "/target.txt"), "keep");
  // A directory.
  ASSERT_EQ(::mkdir((dir + "/d.safetensors").c_str(), 0755), 0);
  r = run_cli({"convert", pkl, dir + "/d.safetensors"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("d.safetensors: cannot write: it exists and is a directory"), std::string::npos) << r.err;
  // An image name that is a link in the output folder: the link's target is never written.
  const std::string model = write_tiny_model(dir);
  const std::string outdir = dir + "/out";
  ASSERT_EQ(::mkdir(outdir.c_str(), 0755), 0);
  ASSERT_EQ(::symlink((dir + "/target.txt").c_str(), (outdir + "/seed0000.png").c_str()), 0);
  r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--outdir", outdir});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("seed0000.png: cannot write: it exists and is a symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir + "/target.txt"), "keep");
}

TEST(OutputSafety, PlantedTemporaryNamesAreNeverWrittenThrough) {
  const std::string dir = temp_dir("planted");
  const std::string out = dir + "/x.bin";
  write_text(dir + "/victim.txt", "victim");
  const std::string tmp = out + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::symlink((dir + "/victim.txt").c_str(), tmp.c_str()), 0);  // the name sg2 tries first
  ASSERT_EQ(::mkfifo((tmp + ".1").c_str(), 0644), 0);                   // and the next one
  detail::write_file_atomic(out, "new data", 8);
  EXPECT_EQ(slurp(out), "new data");
  EXPECT_EQ(slurp(dir + "/victim.txt"), "victim");
  EXPECT_TRUE(S_ISLNK(lstat_mode(tmp)));
  EXPECT_TRUE(S_ISFIFO(lstat_mode(tmp + ".1")));
  EXPECT_EQ(lstat_mode(tmp + ".2"), 0u) << "the temporary file was not renamed into place";
}

TEST(OutputSafety, ANameNearTheLengthLimitGetsAShortTemporaryName) {
  const std::string dir = temp_dir("longname");
  const std::string out = dir + "/" + std::string(250, 'n') + ".png";  // 254 bytes: no room for ".tmp.PID"
  detail::write_file_atomic(out, "data", 4);
  EXPECT_EQ(slurp(out), "data");
  DIR* d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  int entries = 0;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++entries;
  ::closedir(d);
  EXPECT_EQ(entries, 1) << "a temporary file was left";
}

TEST(OutputSafety, AnArchiveOverAFolderFailsBeforeAnyImage) {
  const std::string dir = temp_dir("zipdir");
  const std::string model = write_tiny_model(dir);
  ASSERT_EQ(::mkdir((dir + "/set.zip").c_str(), 0755), 0);
  CliResult r = run_cli(
      {"generate", "--network", model, "--device", "cpu", "--seeds", "0-3", "--outdir", dir + "/set.zip", "-q"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("set.zip: cannot write: it exists and is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rename"), std::string::npos) << "failed at the end, not at the start: " << r.err;
}

TEST(OutputSafety, AFailedWriteToStdoutFailsTheRun) {
  if (!file_exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  const std::string dir = temp_dir("stdout");
  const std::string model = write_tiny_model(dir);
  for (const std::string& args : {"inspect --json " + model, std::string("--help"), std::string("generate --help")}) {
    const std::string cmd = std::string(SG2_CLI) + " " + args + " > /dev/full 2> " + dir + "/err.txt";
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st)) << cmd;
    EXPECT_EQ(WEXITSTATUS(st), 1) << cmd;
    const std::string err = slurp(dir + "/err.txt");
    EXPECT_NE(err.find("error: cannot write to standard output"), std::string::npos) << cmd << ": " << err;
  }
}

TEST(OutputSafety, TextFromTheCommandLineAndEnvironmentIsEscaped) {
  CliResult r = run_cli({"\x1b]0;PWNED\x07"});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  EXPECT_NE(r.err.find("unknown command '\\x1b]0;PWNED\\x07'"), std::string::npos) << r.err;
  r = run_cli({"help", "x\x1b[2J"});
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  r = run_cli({"generate", "--bogus\x1b[2J", "--seeds", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  r = run_cli({"generate", "--seeds", "0", "--device", "cpu", "stray\x1b[31m"});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  r = run_cli({"generate", "--seeds", "0", "--device", "cpu", "--outdir", temp_dir("env") + "/o"},
              {"SG2_MODEL=/x\x1b[31mred"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  EXPECT_NE(r.err.find("SG2_MODEL is set to '/x\\x1b[31mred'"), std::string::npos) << r.err;
}

TEST(OutputSafety, FfmpegGetsExactlyThisRunsFramesAndItsLogIsEscaped) {
  const std::string dir = temp_dir("ffmpeg_log");
  const std::string model = write_tiny_model(dir);
  const std::string bin = fake_ffmpeg(dir, "printf '\\033]0;HIJACK\\007bad\\nsecond line\\n'; exit 1");
  // Frames of an earlier, longer run stay in the folder: the video must not read them.
  CliResult r = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "1,2", "--frames", "6",
                         "--no-video", "--outdir", dir + "/v", "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  r = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "3,4", "--frames", "2", "--outdir",
               dir + "/v", "-q"},
              {"PATH=" + bin + ":/usr/bin:/bin"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(slurp(dir + "/ffmpeg.args").find("-frames:v 3 "), std::string::npos) << slurp(dir + "/ffmpeg.args");
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
  EXPECT_NE(r.err.find("ffmpeg failed (exit 1): \\x1b]0;HIJACK\\x07bad\\x0asecond line"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;  // the error, then its hint
  EXPECT_NE(r.err.find("\nsg2 interpolate: hint: --no-video skips the video\n"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/v/.interpolation.tmp.mp4"));
}

TEST(OutputSafety, AnInterruptEndsFfmpegAndRemovesItsHalfVideo) {
  const std::string dir = temp_dir("ffmpeg_int");
  const std::string model = write_tiny_model(dir);
  const std::string bin = fake_ffmpeg(dir, "sleep 60");
  const std::string outdir = dir + "/v";
  std::vector<std::string> argv_s = {SG2_CLI, "interpolate", "--network", model,      "--device", "cpu", "--seeds",
                                     "1,2",   "--frames",    "2",         "--outdir", outdir,     "-q"};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string path_var = "PATH=" + bin + ":/usr/bin:/bin";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::setpgid(0, 0);  // not the test's group; the signal goes to sg2 alone, as from `kill PID`
    ::putenv(const_cast<char*>(path_var.c_str()));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !file_exists(dir + "/ffmpeg.pid"))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(file_exists(dir + "/ffmpeg.pid")) << "ffmpeg never started";
  const pid_t ffmpeg = static_cast<pid_t>(std::atoi(slurp(dir + "/ffmpeg.pid").c_str()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the script creates its output, then sleeps
  EXPECT_TRUE(file_exists(outdir + "/.interpolation.tmp.mp4"));
  ::kill(pid, SIGINT);
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
  EXPECT_FALSE(file_exists(outdir + "/.interpolation.tmp.mp4")) << "ffmpeg's half video was left";
  // ffmpeg (the shell running `sleep`) got SIGTERM: gone, or a zombie waiting for its new parent.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    const std::string stat = slurp("/proc/" + std::to_string(ffmpeg) + "/stat");
    const size_t close = stat.rfind(')');
    gone = ::kill(ffmpeg, 0) != 0 || (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z');
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "ffmpeg was left running after the interrupt";
  if (!gone) ::kill(ffmpeg, SIGKILL);
}

TEST(OutputSafety, NaNImagesAreAnErrorNotABlackFile) {
  const std::string dir = temp_dir("nan");
  const std::string model = write_tiny_model(dir);
  // psi 1e38 is finite, but the truncated latents overflow float32 in the synthesis.
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--trunc", "1e38",
                         "--format", "both", "--outdir", dir + "/g"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("gave NaN or infinite pixels"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/g/seed0000.png"));
  EXPECT_FALSE(file_exists(dir + "/g/seed0000.npy"));
}

TEST(UserMistakes, ABadThreadCountAndAnUnknownCommandAreOneLineErrors) {
  const std::string dir = temp_dir("mistakes");
  const std::string model = write_tiny_model(dir);
  for (const char* bad : {"abc", "0", "-1", "18446744073709551616", "2000"}) {
    CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--outdir", dir + "/o"},
                          {std::string("SG2_CPU_THREADS=") + bad});
    EXPECT_EQ(r.status, 2) << bad << describe(r);
    EXPECT_NE(r.err.find(std::string("SG2_CPU_THREADS='") + bad + "' is not a thread count in [1, 1024]"),
              std::string::npos)
        << r.err;
  }
  CliResult ok = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--outdir", dir + "/o"},
                         {"SG2_CPU_THREADS=2"});
  EXPECT_EQ(ok.status, 0) << describe(ok);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"frobnicate"}, {"help", "frobnicate"}}) {
    CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("error: unknown command 'frobnicate' (sg2 --help lists the commands)"), std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(UserMistakes, WAvgSamplesOnACheckpointWithItsOwnWAvgGetANote) {
  const std::string dir = temp_dir("wavg_note");
  CliResult r = run_cli({"convert", source_path("tests/data/checkpoints/ada_base16.pkl"), dir + "/m.safetensors",
                         "--w-avg-samples", "5", "-q"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_NE(r.err.find("note: --w-avg-samples and --w-avg-seed were not used: the checkpoint stores its own w_avg"),
            std::string::npos)
      << r.err;
  r = run_cli({"convert", source_path("tests/data/checkpoints/ada_base16.pkl"), dir + "/n.safetensors", "-q"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
}
