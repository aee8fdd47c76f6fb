// The CLI's edges of issue 23 (items 14, 17, 18) and the hints of issue 21: repeated and misspelt
// options, names and values escaped in every command's output, errors with a hint line, sg2 bench
// without a GPU, an archive in "/", interpolate without ffmpeg, and summary times below a second.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/model.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

bool has_text(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

/// True when `s` holds a byte that is not printable ASCII other than '\n' (a terminal escape, a
/// carriage return, a non-ASCII byte).
bool has_raw_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c >= 0x7f) return true;
  return false;
}

}  // namespace

TEST(CliOptions, ARepeatedOptionIsAUsageErrorNamingIt) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"generate", "--seeds", "0-9", "--seeds", "20"},
        {"mix", "--rows", "1", "--cols", "2", "--trunc", "0.5", "--trunc=0.7"},
        {"interpolate", "--seeds", "0,1", "-q", "--quiet"},
        {"compare", "a.png", "b.png", "--max-abs", "1", "--max-abs", "2"},
        {"convert", "a.pkl", "b.safetensors", "--w-avg-seed", "1", "--w-avg-seed", "2"},
        {"inspect", "--json", "--json", "a.pkl"},
        {"bench", "--iters", "1", "--iters", "2"}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << describe(r);
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("sg2 " + args[0] + ": error: --", 0), 0u) << r.err;
    EXPECT_TRUE(has_text(r.err, " times")) << r.err;
    EXPECT_TRUE(has_text(r.err, "give it once")) << r.err;
  }
  const CliResult seeds = run_cli({"generate", "--seeds", "0-9", "--seeds", "20"});
  EXPECT_TRUE(has_text(seeds.err, "--seeds is given 2 times ('0-9', '20'): give it once (see sg2 generate --help)"))
      << seeds.err;
}

TEST(CliOptions, AnUnknownOptionSuggestsTheClosestOnes) {
  CliResult r = run_cli({"generate", "--seed", "3"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "unknown option --seed; did you mean --seeds")) << r.err;
  r = run_cli({"generate", "--outdri", "x", "--seeds", "1"});
  EXPECT_TRUE(has_text(r.err, "unknown option --outdri; did you mean --outdir?")) << r.err;
  r = run_cli({"mix", "--trnc", "0.5"});
  EXPECT_TRUE(has_text(r.err, "did you mean --trunc?")) << r.err;
  r = run_cli({"compare", "--max-ab", "1", "a", "b"});
  EXPECT_TRUE(has_text(r.err, "did you mean --max-abs?")) << r.err;
  // nothing close: no suggestion
  r = run_cli({"generate", "--frobnicate"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has_text(r.err, "unknown option --frobnicate (see sg2 generate --help)")) << r.err;
  EXPECT_FALSE(has_text(r.err, "did you mean")) << r.err;
  // an escape in an option's name is escaped in the message
  r = run_cli({"generate", "--x\x1b[2Jy"});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(has_raw_control(r.err)) << r.err;
}

TEST(CliOptions, PositionalPathsKeepTheirCommas) {
  const std::string dir = temp_dir("cli_commas");
  write_npy(dir + "/a,1.npy", Tensor({1, 2}, {0.5f, 1.0f}));
  write_npy(dir + "/b,2.npy", Tensor({1, 2}, {0.5f, 1.0f}));
  const CliResult r = run_cli({"compare", dir + "/a,1.npy", dir + "/b,2.npy"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "1 of 1 files match")) << r.out;
}

TEST(CliOptions, HelpShowsValueNamesNotArg) {
  for (const char* cmd : {"generate", "mix", "interpolate", "compare", "convert", "inspect", "bench", "blend"}) {
    const CliResult h = run_cli({cmd, "--help"});
    EXPECT_EQ(h.status, 0) << cmd;
    EXPECT_FALSE(std::regex_search(h.out, std::regex("--[a-z-]+ arg "))) << cmd << ":\n" << h.out;
  }
}

// Every command escapes the names and values it prints (a name could set the terminal's title
// or forge an output line): on stdout, in notes and in errors.
TEST(CliEscaping, NamesAndValuesNeverReachTheTerminalRaw) {
  const std::string dir = temp_dir("cli_escape");
  const std::string model = write_tiny_model(dir);
  const std::string evil = "e\x1b]0;pwned\x07\nsg2 generate: forged\r";
  const std::string outdir = dir + "/" + evil;
  CliResult g = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-1", "--outdir", outdir});
  ASSERT_EQ(g.status, 0) << describe(g);
  EXPECT_FALSE(has_raw_control(g.out)) << g.out;
  EXPECT_FALSE(has_raw_control(g.err)) << g.err;
  EXPECT_EQ(lines(g.out), 1) << g.out;
  EXPECT_TRUE(has_text(g.out, "\\x1b]0;pwned\\x07\\x0asg2 generate: forged\\x0d")) << g.out;

  CliResult m =
      run_cli({"mix", "--network", model, "--device", "cpu", "--rows", "1", "--cols", "2", "--outdir", outdir + "m"});
  ASSERT_EQ(m.status, 0) << describe(m);
  EXPECT_FALSE(has_raw_control(m.out)) << m.out;
  CliResult i = run_cli({"interpolate", "--network", model, "--device", "cpu", "--seeds", "0,1", "--frames", "2",
                         "--no-video", "--outdir", outdir + "i"});
  ASSERT_EQ(i.status, 0) << describe(i);
  EXPECT_FALSE(has_raw_control(i.out)) << i.out;

  const std::string evil_model = dir + "/" + evil + ".safetensors";
  CliResult c = run_cli({"convert", source_path("models/digits32/digits32.pkl"), evil_model});
  ASSERT_EQ(c.status, 0) << describe(c);
  EXPECT_FALSE(has_raw_control(c.out)) << c.out;
  EXPECT_EQ(lines(c.out), 1) << c.out;
  CliResult in = run_cli({"inspect", evil_model});
  ASSERT_EQ(in.status, 0) << describe(in);
  EXPECT_FALSE(has_raw_control(in.out)) << in.out;
  EXPECT_TRUE(has_text(in.out, "\\x1b]0;pwned")) << in.out;

  // errors: a missing file, a bad value, a ws file
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", dir + "/missing" + evil},
        {"generate", "--network", dir + "/missing" + evil, "--seeds", "1", "--outdir", dir + "/x"},
        {"generate", "--network", model, "--seeds", "1", "--trunc", evil, "--outdir", dir + "/x"},
        {"generate", "--network", model, "--ws", dir + "/missing" + evil, "--outdir", dir + "/x"},
        {"convert", dir + "/missing" + evil, dir + "/o.safetensors"},
        {"compare", dir + "/missing" + evil, dir + "/o.png"},
        {"bench", "--network", dir + "/missing" + evil, "--device", "cpu"}}) {
    const CliResult r = run_cli(args);
    EXPECT_NE(r.status, 0) << describe(r);
    EXPECT_FALSE(has_raw_control(r.err)) << args[0] << ": " << r.err;
    EXPECT_FALSE(has_raw_control(r.out)) << args[0] << ": " << r.out;
    EXPECT_TRUE(has_text(r.err, "\\x1b")) << args[0] << ": " << r.err;
  }
}

// Library errors carry their advice apart from the message (sg2::Error::hint); the CLI prints it on
// a line of its own and puts its own advice there too.
TEST(CliHints, TheHintIsASecondLine) {
  const std::string dir = temp_dir("cli_hints");
  const std::string gz = dir + "/model.pkl";
  {
    std::ofstream f(gz, std::ios::binary);
    f << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8) << std::string(64, '\0');
  }
  CliResult r = run_cli({"inspect", gz});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_EQ(r.err, "sg2 inspect: error: " + gz +
                       ": a gzip-compressed file, not a checkpoint\nsg2 inspect: hint: decompress it first\n");
  // the library's Error: what() is one line with the hint, message() and hint() apart
  try {
    (void)load_model(gz);
    ADD_FAILURE() << "a gzip file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), gz + ": a gzip-compressed file, not a checkpoint");
    EXPECT_EQ(e.hint(), "decompress it first");
    EXPECT_EQ(std::string(e.what()), e.message() + "; hint: decompress it first");
    EXPECT_EQ(e.with_hint("").hint(), "");
    EXPECT_EQ(std::string(e.with_hint("").what()), e.message());
  }
  // the CLI's advice: use --device cpu (added to the library's own hint when there is one)
  if (!cuda_available()) {
    const std::string model = write_tiny_model(dir);
    r = run_cli({"generate", "--network", model, "--device", "cuda", "--seeds", "1", "--outdir", dir + "/o"});
    EXPECT_EQ(r.status, 1) << describe(r);
    EXPECT_EQ(lines(r.err), 2) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex("\nsg2 generate: hint: (.*, or )?use --device cpu\n$"))) << r.err;
  }
  // no hint: one line
  r = run_cli({"generate", "--seeds", "x"});
  EXPECT_EQ(lines(r.err), 1) << r.err;
}

// sg2 bench, like every other command, runs on the bundled model by default and, without a GPU,
// on the CPU with a note; the table goes to stdout once and nothing of it to stderr.
TEST(CliBench, WithoutAGpuItTimesTheCpuOnTheBundledModel) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is usable here: sg2 bench times it";
  CliResult r = run_cli({"bench", "--batch", "1", "--iters", "1", "--warmup", "0"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.err, "sg2 bench: note: no usable GPU")) << r.err;
  EXPECT_TRUE(has_text(r.err, "timing the CPU backend")) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;  // the note; a progress bar only on a terminal
  EXPECT_TRUE(has_text(r.out, "sg2 bench: the bundled digits32 model")) << r.out;
  EXPECT_TRUE(has_text(r.out, "device: cpu")) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n +[0-9]+ +1 +[0-9.]+ "))) << r.out;  // the row: threads, batch 1
  size_t count = 0;
  for (size_t at = r.out.find("sg2 bench"); at != std::string::npos; at = r.out.find("sg2 bench", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << r.out;
  // -q: not even the note
  r = run_cli({"bench", "-q", "--batch", "1", "--iters", "1", "--warmup", "0"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(r.err.empty()) << r.err;
  // --device cuda insists: one error naming the reason, the hint apart, "sg2 bench" once
  r = run_cli({"bench", "--device", "cuda", "--batch", "1"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_EQ(r.err.rfind("sg2 bench: error: no usable GPU: ", 0), 0u) << r.err;
  EXPECT_TRUE(has_text(r.err, "\nsg2 bench: hint: --device cpu times the CPU backend")) << r.err;
  EXPECT_EQ(r.err.find("sg2 bench", 1), r.err.find("\nsg2 bench: hint") + 1) << r.err;
  // --config and --network together
  r = run_cli({"bench", "--config", "paper256", "--network", "x"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "give --config NAME or --network FILE, not both")) << r.err;
  r = run_cli({"bench", "--device", "cpu", "--batch", "0"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "--batch: 0 is out of range")) << r.err;
}

TEST(CliBench, JsonOnTheCpuIsOneObject) {
  const CliResult r = run_cli({"bench", "--device", "cpu", "--batch", "1", "--iters", "1", "--warmup", "0", "--json"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.out.front(), '{') << r.out;
  EXPECT_TRUE(has_text(r.out, "\"img_per_s\"")) << r.out;
  EXPECT_TRUE(has_text(r.out, "\"device\": \"cpu\"")) << r.out;
}

// A dataset archive in "/" lives in the folder "/", not in an empty one.
TEST(CliOutputs, AnArchiveInTheRootFolderIsNotAnEmptyOutdir) {
  // The model is missing, so nothing is written anywhere: the run fails on --network, after the
  // output folder ("/") was checked.
  const CliResult r = run_cli({"generate", "--network", "/nonexistent/sg2-model.pkl", "--seeds", "1", "--outdir",
                               "/sg2-test-never-written.zip"});
  EXPECT_NE(r.status, 0) << describe(r);
  EXPECT_FALSE(has_text(r.err, "--outdir is empty")) << r.err;
  EXPECT_FALSE(file_exists("/sg2-test-never-written.zip"));
}

TEST(CliOutputs, InterpolateWithoutFfmpegSaysSoInANote) {
  const std::string dir = temp_dir("cli_noffmpeg");
  const std::string model = write_tiny_model(dir);
  const CliResult r = run_cli(
      {"interpolate", "--network", model, "--device", "cpu", "--seeds", "0,1", "--frames", "2", "--outdir", dir + "/o"},
      {"PATH=" + dir});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.err.rfind("sg2 interpolate: note: ffmpeg is not on PATH, so no video was made", 0), 0u) << r.err;
  EXPECT_TRUE(file_exists(dir + "/o/frame00002.png"));
}

// Summary lines never say "0 s": a run shorter than a second is counted in milliseconds.
TEST(CliOutputs, SummariesPrintSubSecondTimes) {
  const std::string dir = temp_dir("cli_times");
  const std::string model = write_tiny_model(dir);
  const std::regex time(", ([0-9]+ ms|[0-9]+\\.[0-9] s)");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--outdir",
                                 dir + "/g"},
        {"mix", "--network", model, "--device", "cpu", "--rows", "1", "--cols", "2", "--outdir", dir + "/m"},
        {"interpolate", "--network", model, "--device", "cpu", "--seeds", "0,1", "--frames", "1", "--no-video",
         "--outdir", dir + "/i"}}) {
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(std::regex_search(r.out, time)) << r.out;
    EXPECT_FALSE(has_text(r.out, ", 0 s")) << r.out;
    EXPECT_FALSE(has_text(r.out, " 0 ms")) << r.out;
  }
}
