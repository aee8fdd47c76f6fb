// sg2 compare's tolerances per kind of file (issue 23 item 1): --max-levels for PNGs and uint8
// arrays, --max-abs for float arrays only, --max-differing as a share of a file's values, all in one
// call on a mixed folder; --max-abs on level files refused with a message naming --max-levels (it
// meant levels there before); --no-recursive; -q. Every case is a file, a command and the line
// expected from it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "sg2/image.h"
#include "sg2/npy.h"
#include "sg2/tensor.h"
#include "test_cli_run.h"
#include "test_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

bool has_text(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

Image8 flat(int size, int channels, uint8_t v) {
  Image8 im;
  im.width = im.height = size;
  im.channels = channels;
  im.pixels.assign(size_t(size) * size * channels, v);
  return im;
}

void mkdirs(const std::string& paths) { ASSERT_EQ(std::system(("mkdir -p " + paths).c_str()), 0); }

/// dir/a and dir/b, as sg2 generate --format both would write them, and a uint8 array:
///   img.png  8x8x3 = 192 values, one of them 1 level off;
///   img.npy  float32 [1, 3, 4, 4], one value 0.04 off (0.25 vs 0.29);
///   u8.npy   uint8 [200], one value 1 level off (1 of 200 = 0.5 %).
std::string mixed_folders(const std::string& name) {
  const std::string dir = temp_dir(name);
  mkdirs(dir + "/a " + dir + "/b");
  Image8 x = flat(8, 3, 100), y = x;
  y.pixels[5] = 101;
  write_png(dir + "/a/img.png", x);
  write_png(dir + "/b/img.png", y);
  Tensor t({1, 3, 4, 4}, 0.25f), u = t;
  u[3] = 0.29f;
  write_npy(dir + "/a/img.npy", t);
  write_npy(dir + "/b/img.npy", u);
  std::vector<uint8_t> p(200, 50), q = p;
  q[7] = 51;
  write_npy_u8(dir + "/a/u8.npy", p.data(), {200});
  write_npy_u8(dir + "/b/u8.npy", q.data(), {200});
  return dir;
}

}  // namespace

TEST(CliCompareTolerances, OneCallHoldsEachKindOfFileToItsOwnTolerance) {
  const std::string dir = mixed_folders("tol_mixed");
  const std::string a = dir + "/a", b = dir + "/b";
  // The case: the .npy 0.04 off fails --max-abs 1e-4 while its PNG, 1 level off, passes --max-levels 1.
  CliResult r = run_cli({"compare", a, b, "--max-levels", "1", "--max-abs", "1e-4"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.out,
                       "PASS img.png: max|diff| 1 levels, mean|diff| 0.00520833, PSNR 70.9638 dB, 1 of 192 "
                       "values differ (0.5208 %)\n"))
      << r.out;
  EXPECT_TRUE(has_text(r.out, "FAIL img.npy: max|diff| 0.04")) << r.out;
  EXPECT_TRUE(has_text(r.out, "values differ (2.083 %); fails --max-abs 0.0001\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "PASS u8.npy: max|diff| 1 levels")) << r.out;
  EXPECT_TRUE(has_text(r.out,
                       "sg2 compare: 2 of 3 files match (PNGs and uint8 arrays: max|diff| <= 1 level; float "
                       "arrays: max|diff| <= 0.0001), 1 do not\n"))
      << r.out;
  EXPECT_EQ(count_lines(r.out), 4) << r.out;
  // Each kind at its own bound: every file passes.
  r = run_cli({"compare", a, b, "--max-levels", "1", "--max-abs", "0.05"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "sg2 compare: 3 of 3 files match")) << r.out;
  // --max-levels 0: levels must be identical, the floats still within --max-abs.
  r = run_cli({"compare", a, b, "--max-levels", "0", "--max-abs", "0.05"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.out, "(0.5208 %); fails --max-levels 0\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "PASS img.npy")) << r.out;
  EXPECT_TRUE(has_text(r.out,
                       "sg2 compare: 1 of 3 files match (PNGs and uint8 arrays: max|diff| <= 0 levels; float "
                       "arrays: max|diff| <= 0.05), 2 do not\n"))
      << r.out;
}

TEST(CliCompareTolerances, MaxDifferingIsTheShareOfEachFilesValuesThatMayDiffer) {
  const std::string dir = mixed_folders("tol_share");
  const std::string a = dir + "/a", b = dir + "/b";
  // 1 of 200 values is 0.5 %: on the bound, passes; 1 of 192 (0.52 %) does not.
  CliResult r = run_cli({"compare", a, b, "--max-levels", "1", "--max-differing", "0.5%", "--max-abs", "0.05"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.out, "FAIL img.png: max|diff| 1 levels")) << r.out;
  EXPECT_TRUE(has_text(r.out, "(0.5208 %); fails --max-differing 0.5%\n")) << r.out;
  EXPECT_TRUE(has_text(r.out,
                       "PASS u8.npy: max|diff| 1 levels, mean|diff| 0.005, PSNR 71.1411 dB, 1 of 200 values "
                       "differ (0.5 %)\n"))
      << r.out;
  EXPECT_TRUE(has_text(r.out, "PASS img.npy")) << r.out;  // a share says nothing of float arrays
  EXPECT_TRUE(has_text(r.out,
                       "(PNGs and uint8 arrays: max|diff| <= 1 level and at most 0.5 % of the values differ; "
                       "float arrays: max|diff| <= 0.05), 1 do not\n"))
      << r.out;
  r = run_cli({"compare", a, b, "--max-levels", "1", "--max-differing", "0.53%", "--max-abs", "0.05"});
  EXPECT_EQ(r.status, 0) << describe(r);
  // Both bounds must hold: 1 level on at most 0.53 % is not 2 levels.
  const std::string c = dir + "/c";
  mkdirs(c);
  Image8 z = flat(8, 3, 100);
  z.pixels[5] = 102;
  write_png(c + "/img.png", z);
  r = run_cli({"compare", a + "/img.png", c + "/img.png", "--max-levels", "1", "--max-differing", "1%"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.out, "fails --max-levels 1\n")) << r.out;
  // --max-differing alone bounds how many values differ, not by how much; a float array, for which
  // no tolerance was given, must then be identical, and its line says so.
  r = run_cli({"compare", a, b, "--max-differing", "1%"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.out, "PASS img.png")) << r.out;
  EXPECT_TRUE(has_text(r.out, "(2.083 %); not identical (no --max-abs or --min-psnr given)\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "(PNGs and uint8 arrays: at most 1 % of the values differ; float arrays: identical)"))
      << r.out;
  r = run_cli({"compare", a + "/img.png", c + "/img.png", "--max-differing", "1%"});
  EXPECT_EQ(r.status, 0) << describe(r);
}

TEST(CliCompareTolerances, TheProjectsPngPolicyIsOneLevelOnAtMostPointTwoPercent) {
  // "1 level on at most 0.2 % of the values" (tests/data/fixtures/README.md): 2 of 1,000 pass, 3 do not.
  const std::string dir = temp_dir("tol_policy");
  std::vector<uint8_t> p(1000, 9), two = p, three = p;
  two[1] = two[500] = 10;
  three = two;
  three[999] = 8;
  write_npy_u8(dir + "/p.npy", p.data(), {1000});
  write_npy_u8(dir + "/two.npy", two.data(), {1000});
  write_npy_u8(dir + "/three.npy", three.data(), {1000});
  CliResult r = run_cli({"compare", dir + "/p.npy", dir + "/two.npy", "--max-levels", "1", "--max-differing", "0.2%"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "2 of 1000 values differ (0.2 %)\n")) << r.out;
  r = run_cli({"compare", dir + "/p.npy", dir + "/three.npy", "--max-levels", "1", "--max-differing", "0.2%"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.out, "3 of 1000 values differ (0.3 %); fails --max-differing 0.2%\n")) << r.out;
}

TEST(CliCompareTolerances, MaxAbsOnPngsOrUint8ArraysIsRefusedNamingMaxLevels) {
  const std::string dir = mixed_folders("tol_refuse");
  const std::string a = dir + "/a", b = dir + "/b";
  // Before, --max-abs 1 meant 1 level for a PNG: such a line is refused, never reread as a float tolerance.
  CliResult r = run_cli({"compare", a + "/img.png", b + "/img.png", "--max-abs", "1"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has_text(r.err, "sg2 compare: error: --max-abs applies to float .npy arrays only, and " + a +
                                  "/img.png is a PNG: give PNGs and uint8 arrays their tolerance in levels with "
                                  "--max-levels N (--max-levels 0: identical) (see sg2 compare --help)\n"))
      << r.err;
  EXPECT_TRUE(has_text(r.err,
                       "sg2 compare: hint: before, --max-abs meant levels for PNGs and uint8 arrays: --max-abs "
                       "1 on them is now --max-levels 1;"))
      << r.err;
  EXPECT_EQ(count_lines(r.err), 2) << r.err;
  // A folder holding PNGs: refused before any file is compared (no lines on stdout).
  r = run_cli({"compare", a, b, "--max-abs", "1"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has_text(r.err, "/img.png is a PNG: give PNGs and uint8 arrays their tolerance in levels")) << r.err;
  // A uint8 array (known from its header).
  r = run_cli({"compare", a + "/u8.npy", b + "/u8.npy", "--max-abs", "2", "--min-psnr", "10"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "and " + a + "/u8.npy is a uint8 array: give PNGs and uint8 arrays")) << r.err;
  // Float arrays keep --max-abs as it was; with --max-levels given the folder is judged.
  EXPECT_EQ(run_cli({"compare", a + "/img.npy", b + "/img.npy", "--max-abs", "0.05"}).status, 0);
  EXPECT_EQ(run_cli({"compare", a + "/img.npy", b + "/img.npy", "--max-abs", "0.03"}).status, 1);
  EXPECT_EQ(run_cli({"compare", a, b, "--max-abs", "1", "--max-levels", "1"}).status, 0);
  // The other old lines keep their verdicts: no tolerance (identical), --min-psnr on every kind.
  EXPECT_EQ(run_cli({"compare", a + "/img.png", b + "/img.png"}).status, 1);
  EXPECT_EQ(run_cli({"compare", a + "/img.png", b + "/img.png", "--min-psnr", "70"}).status, 0);
  EXPECT_EQ(run_cli({"compare", a + "/img.png", b + "/img.png", "--min-psnr", "71"}).status, 1);
}

TEST(CliCompareTolerances, BadValuesAreUsageErrors) {
  const std::string dir = mixed_folders("tol_usage");
  const std::string a = dir + "/a/img.png", b = dir + "/b/img.png";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--max-differing", "0.2"},
       "--max-differing: '0.2' needs a % sign: --max-differing 0.2% allows 0.2 of every 100 values to differ"},
      {{"--max-differing", "101%"}, "--max-differing: 101% is not a share of the values: give 0% to 100%"},
      {{"--max-differing", "-1%"}, "--max-differing: -1% is not a share of the values"},
      {{"--max-differing", "x%"}, "--max-differing: 'x' is not a number"},
      {{"--max-levels", "1.5"}, "--max-levels"},
      {{"--max-levels", "-1"}, "--max-levels"},
      {{"--max-abs", "-1"}, "--max-abs must be >= 0"},
      {{"--max-abs", "nan", "--max-levels", "1"}, "--max-abs: nan is not a finite number"},
  };
  for (const auto& [opts, msg] : cases) {
    std::vector<std::string> args = {"compare", a, b};
    args.insert(args.end(), opts.begin(), opts.end());
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << msg << describe(r);
    EXPECT_TRUE(has_text(r.err, "sg2 compare: error: " + msg)) << r.err;
  }
}

TEST(CliCompareFolders, NoRecursiveComparesOnlyTheFoldersOwnFiles) {
  const std::string dir = temp_dir("norec");
  mkdirs(dir + "/a/x/y " + dir + "/b/x");
  const Image8 im = flat(2, 3, 7);
  Image8 other = im;
  other.pixels[0] = 8;
  write_png(dir + "/a/top.png", im);
  write_png(dir + "/b/top.png", im);
  write_png(dir + "/a/x/deep.png", im);
  write_png(dir + "/b/x/deep.png", other);
  CliResult all = run_cli({"compare", dir + "/a", dir + "/b"});
  EXPECT_EQ(all.status, 1) << describe(all);
  EXPECT_TRUE(has_text(all.out, "FAIL x/deep.png")) << all.out;
  CliResult top = run_cli({"compare", dir + "/a", dir + "/b", "--no-recursive"});
  EXPECT_EQ(top.status, 0) << describe(top);
  EXPECT_FALSE(has_text(top.out, "deep.png")) << top.out;
  EXPECT_EQ(top.out,
            "PASS top.png: max|diff| 0 levels, mean|diff| 0, PSNR inf dB, 0 of 12 values differ (0 %)\n"
            "sg2 compare: 1 of 1 files match (identical values); 2 subfolders not walked (--no-recursive)\n");
  CliResult sub = run_cli({"compare", dir + "/a/x", dir + "/b/x", "--no-recursive"});
  EXPECT_EQ(sub.status, 1) << describe(sub);
  EXPECT_TRUE(has_text(sub.out, "FAIL deep.png: max|diff| 1 levels")) << sub.out;
  EXPECT_TRUE(has_text(sub.out,
                       "sg2 compare: 0 of 1 files match (identical values), 1 do not; 1 subfolder not "
                       "walked (--no-recursive)\n"))
      << sub.out;
  // Folders whose files are all in subfolders: nothing to compare, said so.
  mkdirs(dir + "/c/sub " + dir + "/d/sub");
  write_png(dir + "/c/sub/s.png", im);
  write_png(dir + "/d/sub/s.png", im);
  CliResult nothing = run_cli({"compare", dir + "/c", dir + "/d", "--no-recursive"});
  EXPECT_EQ(nothing.status, 2) << describe(nothing);
  EXPECT_TRUE(has_text(nothing.err, "no .png or .npy files in " + dir + "/c or " + dir +
                                        "/d (--no-recursive: their subfolders were not walked)"))
      << nothing.err;
}

TEST(CliCompareQuiet, QuietPrintsOnlyTheFailLines) {
  const std::string dir = mixed_folders("quiet");
  const std::string a = dir + "/a", b = dir + "/b";
  // Every file passes: nothing at all on stdout or stderr, exit 0.
  CliResult r = run_cli({"compare", a, b, "--max-levels", "1", "--max-abs", "0.05", "-q"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  // One fails: its FAIL line alone (no PASS lines, no summary), exit 1.
  r = run_cli({"compare", a, b, "--max-levels", "1", "--max-abs", "1e-4", "--quiet"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_EQ(r.out.rfind("FAIL img.npy: max|diff| 0.04", 0), 0u) << r.out;
  EXPECT_EQ(r.err, "");
  // Errors still reach stderr.
  r = run_cli({"compare", a, b, "--max-abs", "1", "-q"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has_text(r.err, "sg2 compare: error: --max-abs applies to float .npy arrays only")) << r.err;
  // --help says so.
  const CliResult help = run_cli({"compare", "--help"});
  EXPECT_TRUE(has_text(help.out, "print only the FAIL lines")) << help.out;
  for (const char* opt : {"--max-levels", "--max-differing", "--max-abs", "--min-psnr", "--no-recursive"})
    EXPECT_TRUE(has_text(help.out, opt)) << opt << "\n" << help.out;
}

// docs/golden-tests.md's workflow, run as the page shows it (on the bundled model, CPU backend): the
// goldens, the check at another batch size (identical), the failure report's shape, the reference ops
// within the policy, and the refusal of an old --max-abs line; the page and the README show these lines.
TEST(CliCompareDocs, TheGoldenTestWorkflowRunsAsThePageShowsIt) {
  const std::string page = slurp(source_path("docs/golden-tests.md"));
  const std::string readme = slurp(source_path("README.md"));
  const std::string policy_line =
      "build/sg2 compare out/check tests/goldens --max-levels 1 --max-differing 0.2% --max-abs 1e-4";
  const std::string summary =
      "sg2 compare: 8 of 8 files match (PNGs and uint8 arrays: max|diff| <= 1 level and at most 0.2 % of the values "
      "differ; float arrays: max|diff| <= 0.0001)\n";
  const std::vector<std::string> shown_lines = {
      "$ build/sg2 generate --seeds 0-3 --class 3 --format both --device cpu -q --outdir out/goldens\n",
      "$ build/sg2 generate --seeds 0-3 --class 3 --format both --device cpu --batch 4 -q --outdir out/check\n",
      "$ " + policy_line + "\n", summary, "*.png binary\n*.npy binary\n"};
  for (const std::string& shown : shown_lines)
    EXPECT_TRUE(has_text(page, shown)) << "docs/golden-tests.md does not show: " << shown;
  EXPECT_TRUE(has_text(readme, "$ " + policy_line)) << "README.md";
  EXPECT_TRUE(has_text(readme, "docs/golden-tests.md#golden-tests-in-ci")) << "README.md";

  const std::string dir = temp_dir("workflow");
  const std::vector<std::string> gen = {"generate", "--seeds", "0-3",      "--class", "3",
                                        "--format", "both",    "--device", "cpu",     "-q"};
  auto generate = [&](const std::string& outdir, std::vector<std::string> extra, std::vector<std::string> env) {
    std::vector<std::string> args = gen;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--outdir", outdir});
    env.push_back("SG2_MODEL=");
    const CliResult r = run_cli(args, env);
    EXPECT_EQ(r.status, 0) << describe(r);
  };
  const std::vector<std::string> policy = {"--max-levels", "1", "--max-differing", "0.2%", "--max-abs", "1e-4"};
  auto compare = [&](const std::string& x, const std::string& y, std::vector<std::string> extra) {
    std::vector<std::string> args = {"compare", x, y};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  generate(dir + "/tests/goldens", {}, {});
  generate(dir + "/out/check", {"--batch", "4"}, {});
  CliResult r = compare(dir + "/out/check", dir + "/tests/goldens", policy);
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out,
                       "PASS seed0003.png: max|diff| 0 levels, mean|diff| 0, PSNR inf dB, 0 of 3072 values "
                       "differ (0 %)\n"))
      << r.out;
  EXPECT_EQ(r.out.substr(r.out.rfind("sg2 compare:")), summary);
  // The failure report: every float array fails --max-abs, PNGs 1 level off fail on their share.
  generate(dir + "/out/changed", {"--trunc", "0.9999"}, {});
  r = compare(dir + "/out/changed", dir + "/tests/goldens", policy);
  EXPECT_EQ(r.status, 1) << describe(r);
  for (const char* s : {"0", "1", "2", "3"})
    EXPECT_TRUE(has_text(r.out, std::string("FAIL seed000") + s + ".npy: max|diff| 0.0001")) << r.out;
  EXPECT_TRUE(has_text(r.out, "; fails --max-abs 0.0001\n")) << r.out;
  EXPECT_TRUE(has_text(r.out, "FAIL seed0001.png: max|diff| 1 levels")) << r.out;
  EXPECT_TRUE(has_text(r.out, "; fails --max-differing 0.2%\n")) << r.out;
  // The CPU reference ops against the default backend: within the policy.
  generate(dir + "/out/ref", {}, {"SG2_CPU_REFERENCE=1"});
  r = compare(dir + "/out/check", dir + "/out/ref",
              {"--max-levels", "1", "--max-differing", "0.2%", "--max-abs", "1e-4", "-q"});
  EXPECT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.out, "");
  // The old line the page shows, refused with the message it shows.
  r = compare(dir + "/out/check/seed0003.png", dir + "/tests/goldens/seed0003.png", {"--max-abs", "1"});
  EXPECT_EQ(r.status, 2) << describe(r);
  std::string err = r.err;
  for (size_t at = err.find(dir + "/"); at != std::string::npos; at = err.find(dir + "/"))
    err.erase(at, dir.size() + 1);
  EXPECT_TRUE(has_text(page, err)) << "docs/golden-tests.md does not show:\n" << err;
}
