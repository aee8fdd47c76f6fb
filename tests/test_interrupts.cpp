// Interrupts and failed runs (issue 15 item 10): a signal that arrives while a file is being
// written removes the temporary file; a run that fails after writing keeps the whole files and
// says so; folders a failing run created are removed again.
//
// To catch a child inside the write window deterministically, the test makes the temporary file
// a FIFO: the child is started stopped (so its pid, which names the temporary, is known), the
// FIFO "<output>.tmp.<pid>" is created with a one-page pipe buffer, and once the child has filled
// that buffer it is blocked inside the write, between creating the temporary and renaming it.
// Then the signal is sent.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "sg2/random_model.h"
#include "test_cli_run.h"
#include "test_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

struct Interrupted {
  bool blocked_in_write = false;  // the child filled the pipe: it was inside the write window
  bool killed_by_signal = false;
  int signal = 0;
  bool fifo_left = true;
};

/// Runs `sg2 args` and sends `sig` while it writes `output` (see the top of this file).
Interrupted interrupt_while_writing(const std::vector<std::string>& args, const std::string& output, int sig) {
  Interrupted r;
  std::vector<std::string> argv_s = {SG2_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::raise(SIGSTOP);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, WUNTRACED);
  const std::string fifo = output + ".tmp." + std::to_string(pid);
  if (::mkfifo(fifo.c_str(), 0644) != 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
    return r;
  }
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // a reader, so the child's open does not block
  ::fcntl(rd, F_SETPIPE_SZ, 4096);
  ::kill(pid, SIGCONT);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (std::chrono::steady_clock::now() < deadline) {
    int queued = 0;
    ::ioctl(rd, FIONREAD, &queued);
    if (queued >= 4096) {
      r.blocked_in_write = true;
      break;
    }
    if (::waitpid(pid, &st, WNOHANG) == pid) break;  // ended without blocking: the test fails below
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (r.blocked_in_write) {
    ::kill(pid, sig);
    ::waitpid(pid, &st, 0);
  }
  ::close(rd);
  r.killed_by_signal = WIFSIGNALED(st);
  r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  r.fifo_left = file_exists(fifo);
  if (r.fifo_left) ::unlink(fifo.c_str());
  return r;
}

}  // namespace

TEST(Interrupts, ConvertRemovesItsTemporaryFileOnSigint) {
  const std::string dir = temp_dir("int_convert");
  const std::string out = dir + "/m.safetensors";
  Interrupted r =
      interrupt_while_writing({"convert", source_path("tests/data/checkpoints/ada_base16.pkl"), out}, out, SIGINT);
  ASSERT_TRUE(r.blocked_in_write) << "the child never reached the write";
  EXPECT_TRUE(r.killed_by_signal);
  EXPECT_EQ(r.signal, SIGINT);
  EXPECT_FALSE(r.fifo_left) << "the temporary file is still there";
  EXPECT_FALSE(file_exists(out));
}

TEST(Interrupts, GenerateRemovesItsTemporaryFileOnSigterm) {
  const std::string dir = temp_dir("int_generate");
  const std::string model = dir + "/m64.safetensors";
  save_model_file(model, make_random_model(make_config(64, 64, 8, 4, 4, 0, 3, 1, Architecture::skip, 256.0f, 0), 4));
  const std::string outdir = dir + "/out";
  ASSERT_EQ(::mkdir(outdir.c_str(), 0755), 0);
  // The first file written is seed0007.npy: 64 x 64 x 3 float32, far more than a pipe page. One
  // encoder (--jobs 1), so seed0008.npy waits behind it.
  Interrupted r = interrupt_while_writing(
      {"generate", "--network", model, "--seeds", "7,8", "--format", "npy", "--jobs", "1", "--outdir", outdir},
      outdir + "/seed0007.npy", SIGTERM);
  ASSERT_TRUE(r.blocked_in_write) << "the child never reached the write";
  EXPECT_TRUE(r.killed_by_signal);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_FALSE(r.fifo_left) << "the temporary file is still there";
  EXPECT_FALSE(file_exists(outdir + "/seed0007.npy"));
  EXPECT_FALSE(file_exists(outdir + "/seed0008.npy"));
}

TEST(FailedRuns, KeepWholeFilesAndSaySo) {
  const std::string dir = temp_dir("fail_keep");
  const std::string model = write_tiny_model(dir);
  const std::string outdir = dir + "/out";
  ASSERT_EQ(::mkdir(outdir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((outdir + "/seed0002.png").c_str(), 0755), 0);  // the third image cannot be renamed into place
  // One encoder (--jobs 1) writes the files in order, so exactly two are whole before the error.
  CliResult r =
      run_cli({"generate", "--network", model, "--seeds", "0-3", "--outdir", outdir, "--batch", "1", "--jobs", "1"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(
      r.err.find(
          "seed0002.png: cannot rename into place: Is a directory; 2 files written before this error are kept in " +
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
