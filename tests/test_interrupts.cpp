// Interrupts and failed runs (issue 15 item 10): a signal that arrives while a file is being
// written removes the temporary file; a run that fails after writing keeps the whole files and
// says so; folders a failing run created are removed again.
//
// To catch a process inside the write window deterministically, a forked child writes through
// sg2's TempFile and waits there for the signal; the CLI test interrupts a long run with many
// writers at an arbitrary moment (no temporary file may be left whatever the moment).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>
#include <vector>

#include "sg2/interrupt.h"
#include "sg2/random_model.h"
#include "test_cli_run.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

/// Names in `dir` (not recursive) that contain ".tmp.".
std::vector<std::string> temporaries_in(const std::string& dir) {
  std::vector<std::string> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).find(".tmp.") != std::string::npos) found.push_back(e->d_name);
    ::closedir(d);
  }
  return found;
}

/// Waits for `pid`; true when it was ended by `sig`.
bool ended_by(pid_t pid, int sig) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFSIGNALED(st) && WTERMSIG(st) == sig;
}

}  // namespace

// A child process (forked from the tests) writes through sg2's TempFile and stops inside the write
// window, between creating the temporary file and renaming it; then the signal is sent.
TEST(Interrupts, ASignalRemovesTheTemporaryFileBeingWritten) {
  const std::string dir = temp_dir("int_write");
  const std::string out = dir + "/m.safetensors";
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGPIPE, SIGPWR}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      sg2::install_interrupt_cleanup();
      detail::TempFile t(out);
      std::vector<char> data(1 << 20, 'x');
      std::fwrite(data.data(), 1, data.size(), t.file());
      std::fflush(t.file());
      const char c = 1;
      (void)!::write(ready[1], &c, 1);
      for (;;) ::pause();  // inside the write window until the signal
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the child never reached the write";
    ::close(ready[0]);
    const std::string tmp = out + ".tmp." + std::to_string(pid);
    EXPECT_TRUE(file_exists(tmp)) << "the temporary file is not where the test expects it";
    ::kill(pid, sig);
    EXPECT_TRUE(ended_by(pid, sig)) << "the process did not end as the signal " << sig << " would have";
    EXPECT_FALSE(file_exists(tmp)) << "the temporary file is still there after signal " << sig;
    EXPECT_FALSE(file_exists(out));
  }
}

// Many threads creating, filling and renaming temporary files when the signal arrives (sg2
// generate with --jobs 256 and --format both --save-ws has that many at once): none may be left,
// neither one created while the handler ran nor one beyond the cleanup's table.
TEST(Interrupts, ManyWritersAndASignalLeaveNoTemporaryFiles) {
  for (int round = 0; round < 4; ++round) {
    const std::string dir = temp_dir("int_many_" + std::to_string(round));
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      sg2::install_interrupt_cleanup();
      std::atomic<int> started{0};
      std::vector<std::thread> writers;
      for (int w = 0; w < 200; ++w)
        writers.emplace_back([&, w] {
          std::vector<char> data(16384, 'y');
          ++started;
          for (int i = 0;; ++i) {
            try {  // as the CLI's writers: a failed write (its temporary removed by the handler) is an error, not an
                   // abort
              detail::TempFile t(dir + "/w" + std::to_string(w) + "_" + std::to_string(i % 4) + ".npy");
              std::fwrite(data.data(), 1, data.size(), t.file());
              t.commit();
            } catch (const std::exception&) {
            }
          }
        });
      while (started.load() < 200) std::this_thread::yield();
      const char c = 1;
      (void)!::write(ready[1], &c, 1);
      for (auto& t : writers) t.join();
      ::_exit(0);
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 50 * round));
    ::kill(pid, SIGINT);
    EXPECT_TRUE(ended_by(pid, SIGINT));
    const std::vector<std::string> left = temporaries_in(dir);
    EXPECT_TRUE(left.empty()) << left.size() << " temporary files left, e.g. " << left.front();
  }
}

// The CLI end to end: a signal at any moment of a run with many writers leaves no temporary file
// (whatever the moment, the property holds; the run is long enough to be inside it).
TEST(Interrupts, GenerateLeavesNoTemporaryFilesWhenInterrupted) {
  // SIGTERM (a user, systemd) and SIGUSR1 (what Slurm's --signal sends before a time limit).
  for (int sig : {SIGTERM, SIGUSR1}) {
    const std::string dir = temp_dir("int_generate_" + std::to_string(sig));
    const std::string model = write_tiny_model(dir);
    const std::string outdir = dir + "/out", err = dir + "/stderr.txt";
    std::vector<std::string> argv_s = {SG2_CLI,   "generate", "--network", model,  "--device",  "cpu",
                                       "--seeds", "0-20000",  "--format",  "both", "--save-ws", "--jobs",
                                       "64",      "--outdir", outdir,      "-q"};
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_RDWR);
      const int errfd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
      ::dup2(errfd, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    // Wait until files are being written, then interrupt.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline && !file_exists(outdir + "/seed0100.png"))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(pid, sig);
    EXPECT_TRUE(ended_by(pid, sig)) << "the run ended before the signal " << sig << ", or not by it";
    const std::vector<std::string> left = temporaries_in(outdir);
    EXPECT_TRUE(left.empty()) << left.size() << " temporary files left, e.g. " << left.front();
    // One line says what happened and what was kept (-q silences the run, not this).
    const std::string said = slurp(err);
    const std::regex line(std::string("^sg2 generate: interrupted by ") + (sig == SIGTERM ? "SIGTERM" : "SIGUSR1") +
                          ": [0-9]+ whole files are kept in " + outdir + " \\(no partial file is left\\)\n$");
    EXPECT_TRUE(std::regex_match(said, line)) << said;
  }
}

// A file-size limit (ulimit -f, SIGXFSZ): a clear one-line error naming the file and the limit, no
// temporary file left, instead of the process killed silently.
TEST(FailedRuns, AFileSizeLimitIsAClearError) {
  const std::string dir = temp_dir("fsize");
  const std::string model = write_tiny_model(dir);
  auto limited = [&](const std::string& args) {
    return run_cli({"-c", "ulimit -f 8 && exec '" + std::string(SG2_CLI) + "' " + args}, {}, "/bin/sh");
  };
  // 16x16 float32 .npy images are 3 KiB; the ws file with --save-ws too: a big model file is not.
  CliResult r =
      limited("convert '" + source_path("tests/data/checkpoints/ada_base16.pkl") + "' '" + dir + "/m.safetensors' -q");
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("File too large (the process's file-size limit, ulimit -f, or the largest file this file "
                       "system holds)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(dir + "/m.safetensors"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(temporaries_in(dir).empty());
  EXPECT_FALSE(file_exists(dir + "/m.safetensors"));
  // The bundled 32x32 model: each float32 .npy image is 12 KiB.
  r = limited("generate --class 1 --device cpu --seeds 0-3 --format npy --outdir '" + dir + "/o' -q");
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("File too large (the process's file-size limit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir + "/o/seed000"), std::string::npos) << r.err;
  // A dataset archive grows past the limit while it streams.
  r = limited("generate --class 1 --device cpu --seeds 0-31 --outdir '" + dir + "/z/d.zip' -q");
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("d.zip"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_TRUE(temporaries_in(dir + "/z").empty());
  EXPECT_FALSE(file_exists(dir + "/z/d.zip"));
  EXPECT_TRUE(temporaries_in(dir + "/o").empty());
}

// Interrupted before the first image: the folders the run created are removed again, and the line
// says so.
TEST(Interrupts, AnInterruptBeforeTheFirstImageRemovesTheFoldersItCreated) {
  const std::string dir = temp_dir("int_early");
  const std::string model = dir + "/slow.safetensors";
  // 128 x 128 with 128 channels, one batch of 64 on one thread: seconds before the first image
  save_model_file(model,
                  make_random_model(make_config(128, 16384, 128, 32, 32, 0, 3, 2, Architecture::skip, 256.0f, 0), 1));
  const std::string outdir = dir + "/a/b";
  const std::string err_path = dir + "/stderr.txt";
  for (int sig : {SIGINT, SIGHUP}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(err, 2);
      ::execl(SG2_CLI, SG2_CLI, "generate", "--network", model.c_str(), "--device", "cpu", "--threads", "1", "--seeds",
              "0-63", "--batch", "64", "--outdir", outdir.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && !file_exists(outdir))
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_FALSE(file_exists(outdir + "/seed0000.png")) << "the model is too fast for this test";
    ::kill(pid, sig);
    EXPECT_TRUE(ended_by(pid, sig));
    EXPECT_FALSE(file_exists(dir + "/a")) << "the folders the run created were left";
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGHUP";
    EXPECT_EQ(slurp(err_path), "sg2 generate: interrupted by " + name + ": nothing was written; the folders " + outdir +
                                   " and the parents it created were removed\n");
  }
  // A folder that existed stays.
  ASSERT_EQ(::mkdir((dir + "/kept").c_str(), 0755), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, 2);
    ::execl(SG2_CLI, SG2_CLI, "generate", "--network", model.c_str(), "--device", "cpu", "--threads", "1", "--seeds",
            "0-63", "--batch", "64", "--outdir", (dir + "/kept").c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the folder is checked before the model loads
  ::kill(pid, SIGINT);
  EXPECT_TRUE(ended_by(pid, SIGINT));
  EXPECT_TRUE(file_exists(dir + "/kept"));
  EXPECT_EQ(slurp(err_path), "sg2 generate: interrupted by SIGINT: nothing was written in " + dir + "/kept\n");
}

TEST(FailedRuns, KeepWholeFilesAndSaySo) {
  const std::string dir = temp_dir("fail_keep");
  const std::string model = write_tiny_model(dir);
  const std::string outdir = dir + "/out";
  ASSERT_EQ(::mkdir(outdir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((outdir + "/seed0002.png").c_str(), 0755), 0);  // the third image cannot be written
  // One encoder (--jobs 1) writes the files in order, so exactly two are whole before the error.
  CliResult r =
      run_cli({"generate", "--network", model, "--seeds", "0-3", "--outdir", outdir, "--batch", "1", "--jobs", "1"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(
      r.err.find(
          "seed0002.png: cannot write: it exists and is a directory, not a regular file (sg2 replaces only regular "
          "files; remove it or choose another name); 2 files written before this error are kept in " +
          outdir),
      std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const char* kept : {"/seed0000.png", "/seed0001.png"}) EXPECT_NO_THROW(read_png(outdir + kept)) << kept;
  EXPECT_FALSE(file_exists(outdir + "/seed0003.png"));
  EXPECT_FALSE(file_exists(outdir + "/seed0002.png.tmp"));
}

TEST(FailedRuns, NestedFoldersTheRunCreatedAreRemoved) {
  const std::string dir = temp_dir("fail_nested");
  const std::string model = write_tiny_model(dir, /*c_dim=*/3);
  CliResult r = run_cli({"generate", "--network", model, "--seeds", "0", "--class", "7", "--outdir", dir + "/a/b/c"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("--class 7 is out of range"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/a")) << "a/b/c or its parents were left behind";
  // A folder that existed before stays, also when the run fails.
  ASSERT_EQ(::mkdir((dir + "/kept").c_str(), 0755), 0);
  r = run_cli({"generate", "--network", model, "--seeds", "0", "--class", "7", "--outdir", dir + "/kept/x/y"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(file_exists(dir + "/kept"));
  EXPECT_FALSE(file_exists(dir + "/kept/x"));
}
