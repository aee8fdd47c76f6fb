// Bad input never crashes, never runs anything, and always gets a one-line error naming the file
// and what it is or where it breaks: at the library level (sg2::convert_checkpoint*) and through
// `sg2 convert` (non-zero exit without a signal, one line on stderr, no output file left behind).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "sg2/convert.h"
#include "sg2/error.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using namespace std::string_literals;

namespace {

std::string file_bytes(const std::string& rel) {
  auto v = detail::read_file(test::source_path(rel));
  return std::string(v.begin(), v.end());
}

std::string u32(uint32_t v) {
  return std::string{char(v & 255), char((v >> 8) & 255), char((v >> 16) & 255), char(v >> 24)};
}
std::string u64(uint64_t v) { return u32(uint32_t(v)) + u32(uint32_t(v >> 32)); }

struct Outcome {
  bool ok = false;
  ErrorKind kind = ErrorKind::internal;
  std::string message;
};

Outcome convert_bytes(const std::string& bytes, const std::string& name = "bad.pkl") {
  Outcome o;
  ConvertOptions opts;
  opts.w_avg_samples = 16;
  try {
    convert_checkpoint_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name, opts);
    o.ok = true;
  } catch (const Error& e) {
    o.kind = e.kind();
    o.message = e.what();
  }  // anything else (std::bad_alloc, ...) escapes and fails the test
  return o;
}

/// Library-level expectations for an input that must be refused.
void expect_refused(const std::string& bytes, const std::string& what_it_says, const std::string& label) {
  Outcome o = convert_bytes(bytes);
  ASSERT_FALSE(o.ok) << label << " converted";
  EXPECT_TRUE(o.kind == ErrorKind::bad_file || o.kind == ErrorKind::unsupported) << label << ": " << to_string(o.kind);
  EXPECT_EQ(o.message.rfind("bad.pkl", 0), 0u) << label << ": " << o.message;
  EXPECT_EQ(o.message.find('\n'), std::string::npos) << label << ": " << o.message;
  EXPECT_NE(o.message.find(what_it_says), std::string::npos) << label << ": " << o.message;
}

const std::string kOsSystem =
    "\x80\x02"
    "cos\nsystem\nX\x0b\x00\x00\x00"
    "touch PWNED\x85R."s;
const std::string kPosixSystem = "\x80\x04\x8c\x05posix\x8c\x06system\x93\x8c\x0btouch PWNED\x85R."s;
const std::string kNestedSystem = "\x80\x04}\x8c\x05G_ema\x8c\x02os\x8c\x06system\x93\x8c\x0btouch PWNED\x85Rs."s;

std::string html_page() {
  return "<!DOCTYPE html>\n<html><head><title>Google Drive - Virus scan warning</title></head></html>\n";
}
std::string nested_lists(size_t n) { return "\x80\x02" + std::string(n, ']') + std::string(n - 1, 'a') + "."; }

}  // namespace

TEST(BadCheckpoints, EachBadInputGetsAClearError) {
  expect_refused("", "empty file", "empty");
  expect_refused(html_page(), "HTML page", "html");
  expect_refused("\x1f\x8b\x08\x00rest", "gzip", "gzip");
  expect_refused("version https://git-lfs.github.com/spec/v1\noid sha256:abc\n", "Git LFS pointer", "lfs");
  expect_refused("\x01\x02\x03garbage", "unknown format", "unknown");
  expect_refused(nested_lists(2000000), "nesting too deep", "two million nested lists");
  expect_refused("\x80\x04\x95" + u64(0x7fffffffffffffffull) + "N.", "truncated", "exabyte frame");
  expect_refused("\x80\x04\x8e" + u64(uint64_t(1) << 62) + ".", "needs 4611686018427387904 more bytes",
                 "exabyte bytes");
  expect_refused(kOsSystem, "os.system", "os.system");
  expect_refused(kPosixSystem, "os.system", "posix.system");
  expect_refused(kNestedSystem, "os.system", "os.system as G_ema");
  expect_refused(
      "\x80\x04}\x8c\x01"
      "D]s."s,
      "discriminator-only", "D only");
  expect_refused("\x80\x04]."s, "not a recognised checkpoint", "a list");
  std::FILE* f = std::fopen("PWNED", "r");
  EXPECT_EQ(f, nullptr) << "something ran a command from a pickle";
  if (f) std::fclose(f);
}

TEST(BadCheckpoints, CorruptZipCentralDirectory) {
  const std::string good = file_bytes("tests/data/checkpoints/rosinality16.pt");
  const size_t eocd = good.size() - 22;
  const uint32_t cd = detail::load_le32(reinterpret_cast<const uint8_t*>(good.data()) + eocd + 16);
  std::mt19937 rng(7);
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string z = good;
    const size_t span = good.size() - cd;
    for (int k = 0; k < 4; ++k) z[cd + rng() % span] = char(rng());
    Outcome o = convert_bytes(z, "bad.pkl");
    if (o.ok) continue;  // a flip in a comment or an unused field can be harmless
    ++refused;
    EXPECT_EQ(o.message.find('\n'), std::string::npos) << o.message;
  }
  EXPECT_GT(refused, 200);
  std::string z = good;
  z[cd] = 'Z';
  expect_refused(z, "corrupt zip archive", "central directory signature");
}

TEST(BadCheckpoints, TruncatedAtEveryByte) {
  for (const char* rel : {"tests/data/checkpoints/rosinality16_legacy.pt", "tests/data/checkpoints/tf_orig16_gray.pkl",
                          "tests/data/checkpoints/ada_base16.pkl"}) {
    const std::string full = file_bytes(rel);
    ASSERT_TRUE(convert_bytes(full).ok) << rel;
    for (size_t n = 0; n < full.size(); ++n) {
      Outcome o = convert_bytes(full.substr(0, n));
      ASSERT_FALSE(o.ok) << rel << " cut at " << n;
      ASSERT_EQ(o.kind, ErrorKind::bad_file) << rel << " cut at " << n << ": " << o.message;
      ASSERT_EQ(o.message.find('\n'), std::string::npos) << o.message;
    }
  }
  // The zip format keeps its directory at the end: every cut is an error too (checked on a stride).
  const std::string zip = file_bytes("tests/data/checkpoints/rosinality16.pt");
  for (size_t n = 0; n < zip.size(); n += 7) EXPECT_FALSE(convert_bytes(zip.substr(0, n)).ok) << n;
}

TEST(BadCheckpoints, RandomBytesAndBitFlips) {
  std::mt19937 rng(1234);
  for (const std::string& prefix : {""s, "\x80\x04"s, "\x80\x02"s, "PK\x03\x04"s}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::string b = prefix;
      const size_t n = 1 + rng() % 2048;
      for (size_t i = 0; i < n; ++i) b += char(rng());
      Outcome o = convert_bytes(b);
      EXPECT_FALSE(o.ok);
      EXPECT_EQ(o.message.find('\n'), std::string::npos) << o.message;
    }
  }
  int converted = 0, refused = 0;
  for (const char* rel : {"tests/data/checkpoints/ada_base16.pkl", "tests/data/checkpoints/tf_ada_resnet16.pkl",
                          "tests/data/checkpoints/rosinality16_legacy.pt", "tests/data/checkpoints/rosinality16.pt"}) {
    const std::string good = file_bytes(rel);
    for (int trial = 0; trial < 600; ++trial) {
      std::string b = good;
      const size_t pos = rng() % b.size();
      b[pos] = char(b[pos] ^ (1 << (rng() % 8)));
      Outcome o = convert_bytes(b);  // a flip inside tensor data converts; elsewhere it is an error
      (o.ok ? converted : refused)++;
      EXPECT_EQ(o.message.find('\n'), std::string::npos) << rel << " flip at " << pos << ": " << o.message;
    }
  }
  std::printf("bit flips: %d converted (flips in weights), %d refused\n", converted, refused);
  EXPECT_GT(refused, 0);
}

// --- through the command line ---------------------------------------------------------------

namespace {

struct CliRun {
  int status = -1;
  std::string err, out;
};

CliRun run_cli(const std::string& args, const std::string& dir) {
  CliRun r;
  const std::string err = dir + "/stderr.txt", out = dir + "/stdout.txt";
  r.status = std::system((std::string(SG2_CLI) + " " + args + " >" + out + " 2>" + err).c_str());
  std::ifstream e(err), o(out);
  std::stringstream es, os;
  es << e.rdbuf();
  os << o.rdbuf();
  r.err = es.str();
  r.out = os.str();
  return r;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

}  // namespace

TEST(BadCheckpointsCli, ConvertFailsCleanlyAndLeavesNothing) {
  if (std::string(SG2_CLI).empty()) GTEST_SKIP() << "no CLI in this build";
  const std::string dir = test::temp_dir("cli_bad");
  const std::string good = file_bytes("tests/data/checkpoints/ada_base16.pkl");
  std::string flipped_cd = file_bytes("tests/data/checkpoints/rosinality16.pt");
  flipped_cd[flipped_cd.size() - 22 + 16] ^= 0x55;
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"empty.pkl", ""},
      {"page.pkl", html_page()},
      {"truncated.pkl", good.substr(0, good.size() / 2)},
      {"random.pkl", std::string("\x80\x04\x93\x11\x22\x33\x44\x55\x66\x77\x88\x99", 12)},
      {"cd.pt", flipped_cd},
      {"nested.pkl", nested_lists(2000000)},
      {"exabyte.pkl", "\x80\x04\x8e" + u64(uint64_t(1) << 60) + "."},
      {"system.pkl", kOsSystem},
      {"stylegan3.pkl", file_bytes("tests/data/checkpoints/unsupported_stylegan3.pkl")},
  };
  for (const auto& [name, bytes] : inputs) {
    write(dir + "/" + name, bytes);
    const std::string out = dir + "/out_" + name + ".safetensors";
    CliRun r = run_cli("convert " + dir + "/" + name + " " + out, dir);
    ASSERT_TRUE(WIFEXITED(r.status)) << name << ": killed by a signal";
    EXPECT_NE(WEXITSTATUS(r.status), 0) << name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << name << ": " << r.err;
    EXPECT_EQ(r.err.rfind("sg2 convert: error: ", 0), 0u) << name << ": " << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
    struct stat st {};
    EXPECT_NE(::stat(out.c_str(), &st), 0) << name << ": output file left behind";
  }
  for (const std::string& f : list_dir(dir))
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << "temporary file left: " << f;
  std::FILE* p = std::fopen("PWNED", "r");
  EXPECT_EQ(p, nullptr);
  if (p) std::fclose(p);
}

TEST(BadCheckpointsCli, ConvertAndInspectWork) {
  if (std::string(SG2_CLI).empty()) GTEST_SKIP() << "no CLI in this build";
  const std::string dir = test::temp_dir("cli_ok");
  const std::string out = dir + "/m.safetensors";
  CliRun r = run_cli("convert " + test::source_path("tests/data/checkpoints/rosinality16_train.pt") + " " + out, dir);
  ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.err;
  EXPECT_NE(r.err.find("warning: the checkpoint has no w_avg"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("converted"), std::string::npos) << r.out;
  Model m = load_model_file(out);
  EXPECT_TRUE(m.config.w_avg_estimated);
  r = run_cli("inspect --json " + out, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"family\": \"rosinality\""), std::string::npos) << r.out;
  r = run_cli("inspect " + test::source_path("tests/data/checkpoints/tf_ada_resnet16.pkl"), dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("stylegan2-ada-tf"), std::string::npos) << r.out;
  for (const char* help : {"convert --help", "inspect --help"}) {
    r = run_cli(help, dir);
    EXPECT_EQ(r.status, 0) << help;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
  r = run_cli("convert only-one-argument", dir);
  EXPECT_EQ(WEXITSTATUS(r.status), 2);
  r = run_cli("convert " + out + " " + out, dir);
  EXPECT_NE(WEXITSTATUS(r.status), 0);
}
