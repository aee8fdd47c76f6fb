// The CLI's progress bar on a terminal moves within one long batch: the CPU backend reports each
// layer (Generator::set_progress), and `sg2 generate` shows the share of the running batch done.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sg2/model.h"
#include "sg2/random_model.h"
#include "test_util.h"

using namespace sg2;

TEST(CliProgress, TheBarMovesWithinOneBatchOnATerminal) {
  const std::string dir = test::temp_dir("cli_progress");
  const std::string model = dir + "/wide256.safetensors";
  // 256 x 256 with up to 256 channels: one batch of 12 takes a few seconds on one core
  save_model_file(model,
                  make_random_model(make_config(256, 16384, 256, 32, 32, 0, 3, 2, Architecture::skip, 256.0f, 0), 3));
  const std::string out = dir + "/out";
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0) << "forkpty failed";
  if (pid == 0) {
    ::execl(SG2_CLI, SG2_CLI, "generate", "--network", model.c_str(), "--seeds", "0-11", "--batch", "12", "--device",
            "cpu", "--threads", "1", "--outdir", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, size_t(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child has exited
    }
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  // a bar drawn while the single batch ran: 0 of 12 images done, with the batch's share in percent
  EXPECT_NE(text.find("sg2 generate ["), std::string::npos) << text;
  EXPECT_NE(text.find(" 0/12 ("), std::string::npos) << text;
  EXPECT_NE(text.find("%)"), std::string::npos) << text;
  // before the first image is done, no rate and no time left: only the time so far
  for (size_t at = text.find(" 0/12"); at != std::string::npos; at = text.find(" 0/12", at + 1)) {
    const std::string draw = text.substr(at, text.find_first_of("\r\n", at) - at);
    EXPECT_EQ(draw.find("/s"), std::string::npos) << draw;
    EXPECT_EQ(draw.find("left"), std::string::npos) << draw;
  }
  EXPECT_NE(text.find("12 images (256x256"), std::string::npos) << text;
}
