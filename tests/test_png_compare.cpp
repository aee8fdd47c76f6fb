// PNG reading with libpng and `sg2 compare` (issue 15 item 8), grids (item 2): every file here is
// built byte by byte (png_bytes.h) to be exactly the case under test. Memory is asserted from the
// child's peak resident size (getrusage), never from timing.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "png_bytes.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "sg2/npy.h"
#include "sg2/random_model.h"
#include "test_cli_run.h"
#include "test_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

void put(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string read_error(const std::string& path) {
  try {
    read_png(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

PngSpec gray16(int w, int h, uint32_t base) {
  PngSpec s;
  s.width = w;
  s.height = h;
  s.depth = 16;
  s.color_type = 0;
  for (int i = 0; i < w * h; ++i) s.samples.push_back(base + uint32_t(i) * 257u);
  return s;
}

/// Runs the CLI and returns its exit status and peak resident memory (KiB), measured by
/// sg2_peak_rss (tests/tools/peak_rss.cpp): the CLI's own peak, whatever this process used before.
struct Measured {
  int status = -1;
  long max_rss_kib = 0;
  std::string out;
};
Measured run_measured(const std::vector<std::string>& args, const std::string& dir) {
  const std::string out_path = dir + "/measured.out";
  const std::string report_path = dir + "/measured.rss";
  std::remove(report_path.c_str());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> argv_s = {SG2_PEAK_RSS, report_path, SG2_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Measured m;
  pid_t pid = 0;
  if (::posix_spawn(&pid, SG2_PEAK_RSS, &fa, nullptr, argv.data(), environ) == 0) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    std::istringstream report(slurp(report_path));
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0 && (report >> m.status >> m.max_rss_kib))) {
      m.status = -1;
      m.max_rss_kib = 0;
    }
  }
  posix_spawn_file_actions_destroy(&fa);
  m.out = slurp(out_path);
  return m;
}

}  // namespace

TEST(PngRead, SixteenBitSamplesAreKept) {
  const std::string dir = temp_dir("png16");
  put(dir + "/a.png", png_file(gray16(3, 2, 1000)));
  PngReader r(dir + "/a.png");
  ASSERT_EQ(r.bits(), 16);
  ASSERT_EQ(r.channels(), 1);
  EXPECT_EQ(r.next_row(), (std::vector<uint16_t>{1000, 1257, 1514}));
  EXPECT_EQ(r.next_row(), (std::vector<uint16_t>{1771, 2028, 2285}));
  r.finish();
  // read_png (8 bits) keeps the high bytes, as documented.
  const Image8 im = read_png(dir + "/a.png");
  EXPECT_EQ(im.pixels, (std::vector<uint8_t>{3, 4, 5, 6, 7, 8}));
}

TEST(PngRead, PalettesLowBitDepthsTransparencyAndInterlacing) {
  const std::string dir = temp_dir("pngkinds");
  // A 2-bit palette image with a tRNS chunk: expanded to RGBA.
  PngSpec p;
  p.width = 5;
  p.height = 2;
  p.depth = 2;
  p.color_type = 3;
  p.palette = std::string("\x0a\x14\x1e\x28\x32\x3c\x46\x50\x5a", 9);  // 3 entries
  p.trns = std::string("\x80", 1);                                     // entry 0 half transparent
  p.samples = {0, 1, 2, 0, 1, 2, 2, 1, 0, 0};
  put(dir + "/pal.png", png_file(p));
  const Image8 pal = read_png(dir + "/pal.png");
  ASSERT_EQ(pal.channels, 4);
  EXPECT_EQ(std::vector<uint8_t>(pal.pixels.begin(), pal.pixels.begin() + 8),
            (std::vector<uint8_t>{10, 20, 30, 128, 40, 50, 60, 255}));
  // 1-bit gray is scaled to 0 / 255.
  PngSpec g;
  g.width = 9;
  g.height = 1;
  g.depth = 1;
  g.color_type = 0;
  g.samples = {1, 0, 1, 1, 0, 0, 0, 0, 1};
  put(dir + "/bits.png", png_file(g));
  EXPECT_EQ(read_png(dir + "/bits.png").pixels, (std::vector<uint8_t>{255, 0, 255, 255, 0, 0, 0, 0, 255}));
  // Interlaced (Adam7) RGB reads as the same pixels as the plain file.
  PngSpec rgb;
  rgb.width = 11;
  rgb.height = 7;
  for (int i = 0; i < 11 * 7 * 3; ++i) rgb.samples.push_back(uint32_t((i * 37) % 256));
  put(dir + "/plain.png", png_file(rgb));
  rgb.interlaced = true;
  put(dir + "/adam7.png", png_file(rgb));
  EXPECT_EQ(read_png(dir + "/adam7.png").pixels, read_png(dir + "/plain.png").pixels);
}

TEST(PngRead, PaletteIndexBeyondThePaletteIsAnError) {
  const std::string dir = temp_dir("pngpal");
  PngSpec p;
  p.width = 4;
  p.height = 1;
  p.color_type = 3;
  p.palette = std::string("\x01\x02\x03\x04\x05\x06", 6);  // 2 entries
  p.samples = {0, 1, 7, 1};
  put(dir + "/bad.png", png_file(p));
  const std::string msg = read_error(dir + "/bad.png");
  EXPECT_NE(msg.find(dir + "/bad.png: palette index 7 at pixel (2, 0) is beyond its 2-entry palette"),
            std::string::npos)
      << msg;
  // sg2 compare must not call two such files identical.
  put(dir + "/bad2.png", png_file(p));
  CliResult r = run_cli({"compare", dir + "/bad.png", dir + "/bad2.png"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("palette index 7"), std::string::npos) << r.out;
}

TEST(PngRead, BadCrcsAndBrokenDataAreErrors) {
  const std::string dir = temp_dir("pngcrc");
  PngSpec s = gray16(4, 4, 0);
  s.extra_chunks = {{"tEXt", std::string("Comment\0hello", 13)}};
  const std::string good = png_file(s);
  put(dir + "/good.png", good);
  EXPECT_EQ(read_error(dir + "/good.png"), "");
  auto flip_in = [&](const std::string& type, int from_end) {  // a byte of the chunk's CRC
    std::string b = good;
    const size_t at = b.find(type);
    const uint32_t len =
        (uint8_t(b[at - 4]) << 24) | (uint8_t(b[at - 3]) << 16) | (uint8_t(b[at - 2]) << 8) | uint8_t(b[at - 1]);
    b[at + 4 + len + 4 - from_end] ^= 0x40;
    return b;
  };
  for (const char* type : {"IHDR", "tEXt", "IDAT", "IEND"}) {
    put(dir + "/crc.png", flip_in(type, 1));
    const std::string msg = read_error(dir + "/crc.png");
    EXPECT_NE(msg.find(dir + "/crc.png: "), std::string::npos) << type << ": " << msg;
    EXPECT_FALSE(msg.empty()) << "a bad " << type << " CRC was accepted";
    put(dir + "/crc2.png", flip_in(type, 1));
    CliResult r = run_cli({"compare", dir + "/crc.png", dir + "/crc2.png"});
    EXPECT_EQ(r.status, 1) << type << ": " << describe(r);
  }
  std::string cut = good.substr(0, good.size() - 20);
  put(dir + "/cut.png", cut);
  EXPECT_NE(read_error(dir + "/cut.png"), "");
}

TEST(CliCompare, SixteenBitImagesAreComparedAtSixteenBits) {
  const std::string dir = temp_dir("cmp16");
  put(dir + "/a.png", png_file(gray16(4, 4, 1000)));
  PngSpec b = gray16(4, 4, 1000);
  b.samples[5] += 1;  // the low byte of one sample
  put(dir + "/b.png", png_file(b));
  CliResult same = run_cli({"compare", dir + "/a.png", dir + "/a.png"});
  EXPECT_EQ(same.status, 0) << describe(same);
  CliResult r = run_cli({"compare", dir + "/a.png", dir + "/b.png"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.out.find("max|diff| 1 levels (16-bit)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 16 values differ"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli({"compare", dir + "/a.png", dir + "/b.png", "--max-levels", "1"}).status, 0);
  // --max-levels counts levels of the file's own depth: 257 16-bit levels are one 8-bit level.
  PngSpec c = gray16(4, 4, 1000);
  c.samples[5] += 257;
  put(dir + "/c.png", png_file(c));
  CliResult wide = run_cli({"compare", dir + "/a.png", dir + "/c.png", "--max-levels", "256"});
  EXPECT_EQ(wide.status, 1) << describe(wide);
  EXPECT_NE(wide.out.find("max|diff| 257 levels (16-bit)"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("; fails --max-levels 256"), std::string::npos) << wide.out;
  EXPECT_EQ(run_cli({"compare", dir + "/a.png", dir + "/c.png", "--max-levels", "257"}).status, 0);
  // 8 bits against 16 bits is not "identical".
  PngSpec e;
  e.width = 4;
  e.height = 4;
  e.color_type = 0;
  for (uint32_t v : gray16(4, 4, 1000).samples) e.samples.push_back(v >> 8);
  put(dir + "/c8.png", png_file(e));
  CliResult depth = run_cli({"compare", dir + "/a.png", dir + "/c8.png"});
  EXPECT_EQ(depth.status, 1);
  EXPECT_NE(depth.out.find("bit depth mismatch: 16 vs 8 bits per sample"), std::string::npos) << depth.out;
}

TEST(CliCompare, PixelLimitRefusesBombsBeforeDecompressing) {
  const std::string dir = temp_dir("cmpbomb");
  // A real decompression bomb: 20000 x 20000 gray zeros (400 MB) deflated to about 400 KB.
  PngSpec s;
  s.width = s.height = 20000;
  s.color_type = 0;
  z_stream z{};
  ASSERT_EQ(deflateInit(&z, 9), Z_OK);
  const std::string row(20001, '\0');
  std::string idat(1 << 20, '\0');
  size_t used = 0;
  for (int y = 0; y < 20000; ++y) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(row.data()));
    z.avail_in = uInt(row.size());
    do {
      if (used + 65536 > idat.size()) idat.resize(idat.size() * 2);
      z.next_out = reinterpret_cast<Bytef*>(&idat[used]);
      z.avail_out = 65536;
      deflate(&z, y == 19999 ? Z_FINISH : Z_NO_FLUSH);
      used += 65536 - z.avail_out;
    } while (z.avail_in > 0 || (y == 19999 && z.avail_out == 0));
  }
  deflateEnd(&z);
  idat.resize(used);
  const std::string bomb = png_file(s, idat);
  ASSERT_LT(bomb.size(), 1000000u);
  put(dir + "/bomb.png", bomb);
  put(dir + "/bomb2.png", bomb);
  // Refused by the default limit without decompressing (the library and the CLI).
  EXPECT_NE(read_error(dir + "/bomb.png")
                .find("bomb.png: the image is 20000x20000 (400000000 pixels), more than the limit of 67108864"),
            std::string::npos);
  Measured refused = run_measured({"compare", dir + "/bomb.png", dir + "/bomb2.png"}, dir);
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.out.find("is more than --max-pixels 67108864; raise --max-pixels to compare it"), std::string::npos)
      << refused.out;
  EXPECT_GT(refused.max_rss_kib, 0);
  EXPECT_LT(refused.max_rss_kib, 100 * 1024) << "KiB";
  // Allowed: decoded row by row, so 400 MB of pixels take a few rows of memory.
  Measured allowed = run_measured({"compare", dir + "/bomb.png", dir + "/bomb2.png", "--max-pixels", "400000000"}, dir);
  EXPECT_EQ(allowed.status, 0) << allowed.out;
  EXPECT_NE(allowed.out.find("0 of 400000000 values differ"), std::string::npos) << allowed.out;
  EXPECT_GT(allowed.max_rss_kib, 0);
  EXPECT_LT(allowed.max_rss_kib, 100 * 1024) << "KiB";
}

TEST(CliCompare, FoldersAreWalkedWithTheirSubfoldersAndSaySo) {
  const std::string dir = temp_dir("cmpdirs");
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/a/x/y " + dir + "/b/x/y " + dir + "/target").c_str()), 0);
  Image8 im;
  im.width = im.height = 2;
  im.channels = 3;
  im.pixels.assign(12, 7);
  for (const char* side : {"/a", "/b"}) {
    write_png(dir + side + "/top.png", im);
    write_png(dir + side + "/x/y/deep.png", im);
  }
  Image8 other = im;
  other.pixels[0] = 8;
  write_png(dir + "/b/x/y/deep.png", other);
  put(dir + "/a/notes.txt", "not an image");
  ASSERT_EQ(::symlink((dir + "/target").c_str(), (dir + "/a/linked").c_str()), 0);
  CliResult r = run_cli({"compare", dir + "/a", dir + "/b"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.out.find("PASS top.png"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL x/y/deep.png: max|diff| 1 levels"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(
          "1 of 2 files match (identical values), 1 do not; 4 subfolders included, 1 symbolic link to a folder not "
          "followed, 1 other file ignored"),
      std::string::npos)
      << r.out;
}

TEST(Grid, SizesAreCheckedIn64BitsBeforeAnyPixel) {
  // 256 x 256 cells of a 128 x 128 RGBA model: 4 GiB in one piece is refused before allocating.
  EXPECT_NO_THROW(check_png_size(32768, 32768, 4, PngWrite::streamed, "grid"));
  try {
    check_png_size(32768, 32768, 4, PngWrite::whole, "grid");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(
                  "grid: a 32768x32768 PNG of 4 channels holds 4294967296 bytes of pixels; sg2 writes at most "
                  "536870912 (512 MiB) in one piece"),
              std::string::npos)
        << e.what();
  }
  Image8 cell;
  cell.width = cell.height = 128;
  cell.channels = 4;
  cell.pixels.assign(size_t(128) * 128 * 4, 1);
  EXPECT_THROW(make_grid({cell}, 256, 256), Error);
  EXPECT_THROW(check_png_size(int64_t(1) << 31, 1, 3, PngWrite::streamed, "x"), Error);  // no int wrap
  EXPECT_THROW(check_png_size(1000001, 1, 3, PngWrite::streamed, "x"), Error);
}

TEST(Grid, TheStreamedGridMatchesTheGridInMemory) {
  const std::string dir = temp_dir("gridstream");
  std::vector<Image8> cells;
  for (int k = 0; k < 4; ++k) {
    Image8 c;
    c.width = 3;
    c.height = 2;
    c.channels = 4;
    for (int i = 0; i < 3 * 2 * 4; ++i) c.pixels.push_back(uint8_t(10 * k + i));
    cells.push_back(c);
  }
  {
    GridPngWriter w(dir + "/grid.png", 3, 2, 3, 2, 4);
    for (const Image8& c : cells) w.add(c);
    w.finish();
  }
  const Image8 streamed = read_png(dir + "/grid.png");
  const Image8 whole = make_grid(cells, 3, 2);
  EXPECT_EQ(streamed.width, 9);
  EXPECT_EQ(streamed.height, 4);
  EXPECT_EQ(streamed.pixels, whole.pixels);
  // An unfinished grid leaves nothing behind.
  {
    GridPngWriter w(dir + "/unfinished.png", 3, 2, 3, 2, 4);
    w.add(cells[0]);
  }
  EXPECT_FALSE(file_exists(dir + "/unfinished.png"));
  EXPECT_FALSE(file_exists(dir + "/unfinished.png.tmp." + std::to_string(::getpid())));
}

TEST(Grid, GenerateRefusesHugeGridsAndStreamsLargeOnes) {
  const std::string dir = temp_dir("gridcli");
  const std::string model = dir + "/m32.safetensors";
  save_model_file(model, make_random_model(make_config(32, 64, 8, 4, 4, 0, 3, 1, Architecture::skip, 256.0f, 0), 3));
  // Wider than any PNG sg2 writes: refused before any image is made, nothing left behind.
  CliResult big =
      run_cli({"generate", "--network", model, "--seeds", "0", "--grid", "40000x1", "--outdir", dir + "/big"});
  EXPECT_EQ(big.status, 2) << describe(big);
  EXPECT_NE(big.err.find("--grid 40000x1 of 32x32 images: a 1280000x32 PNG is larger than sg2 writes (at most 1000000 "
                         "pixels per side)"),
            std::string::npos)
      << big.err;
  EXPECT_FALSE(file_exists(dir + "/big"));
  // A 256 x 256 grid (8192 x 8192 RGB, 192 MiB of pixels) of one seed: streamed, so the run's
  // memory is far below the grid's size.
  Measured m = run_measured(
      {"generate", "--network", model, "--seeds", "0", "--grid", "256x256", "--outdir", dir + "/one", "-q"}, dir);
  ASSERT_EQ(m.status, 0);
  EXPECT_GT(m.max_rss_kib, 0);
  EXPECT_LT(m.max_rss_kib, 100 * 1024) << "KiB for a 192 MiB grid";
  PngReader r(dir + "/one/grid.png");
  EXPECT_EQ(r.width(), 8192);
  EXPECT_EQ(r.height(), 8192);
  const Image8 cell = read_png(dir + "/one/seed0000.png");
  const std::vector<uint16_t>& row0 = r.next_row();
  for (int x = 0; x < 32 * 3; ++x) ASSERT_EQ(row0[size_t(x)], cell.pixels[size_t(x)]) << x;
  for (size_t x = 32 * 3; x < row0.size(); ++x) ASSERT_EQ(row0[x], 0) << x;  // missing cells are black
}

// --- hostile-input review of sg2 compare ---------------------------------------------------

namespace {

/// A .npy file (version 1.0) of `descr` ("<f8", "|u1", ...) and `shape` ("(3,)", "(5, 0)") with
/// the values' bytes as given.
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& payload) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string f = std::string("\x93NUMPY\x01\x00", 8);
  f += char(header.size() & 255);
  f += char(header.size() >> 8);
  return f + header + payload;
}

template <typename T>
std::string npy_of(const std::string& descr, const std::vector<T>& values) {
  std::string payload(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return npy_file(descr, "(" + std::to_string(values.size()) + ",)", payload);
}

}  // namespace

TEST(CliCompare, Float64IsComparedInDoubleNotNarrowedToFloat32) {
  const std::string dir = temp_dir("cmpf8");
  put(dir + "/a.npy", npy_of<double>("<f8", {1.0, 0.5, -0.25}));
  put(dir + "/b.npy", npy_of<double>("<f8", {1.0 + 1e-12, 0.5 + 1e-12, -0.25 + 1e-12}));
  CliResult r = run_cli({"compare", dir + "/a.npy", dir + "/b.npy"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.out.find("3 of 3 values differ"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--max-abs", "1e-9"}).status, 0);
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--max-abs", "1e-13"}).status, 1);
  // float64 0.1 against float32 0.1: the float32 is widened, and they differ by about 1.49e-9.
  put(dir + "/d.npy", npy_of<double>("<f8", {0.1}));
  put(dir + "/f.npy", npy_of<float>("<f4", {0.1f}));
  CliResult mixed = run_cli({"compare", dir + "/d.npy", dir + "/f.npy"});
  EXPECT_EQ(mixed.status, 1) << describe(mixed);
  EXPECT_NE(mixed.out.find("max|diff| 1.49012e-09"), std::string::npos) << mixed.out;
  EXPECT_EQ(run_cli({"compare", dir + "/d.npy", dir + "/f.npy", "--max-abs", "1e-8"}).status, 0);
  // The same float32 values in float32 and float64 files are identical.
  put(dir + "/w.npy", npy_of<double>("<f8", {double(0.1f)}));
  CliResult widened = run_cli({"compare", dir + "/w.npy", dir + "/f.npy"});
  EXPECT_EQ(widened.status, 0) << describe(widened);
}

TEST(CliCompare, Uint8ArraysAreComparedAsLevels) {
  const std::string dir = temp_dir("cmpu8");
  // sg2's own --format u8npy output, compared with a copy of itself.
  CliResult gen = run_cli({"generate", "--device", "cpu", "--seeds", "0-1", "--class", "0", "--format", "u8npy",
                           "--outdir", dir + "/u1", "-q"});
  ASSERT_EQ(gen.status, 0) << describe(gen);
  ASSERT_EQ(std::system(("cp -r " + dir + "/u1 " + dir + "/u2").c_str()), 0);
  CliResult same = run_cli({"compare", dir + "/u1", dir + "/u2"});
  EXPECT_EQ(same.status, 0) << describe(same);
  EXPECT_NE(same.out.find("2 of 2 files match (identical values)"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("max|diff| 0 levels"), std::string::npos) << same.out;
  // Levels as for 8-bit PNGs: |diff| in levels, PSNR with peak 255.
  put(dir + "/a.npy", npy_of<uint8_t>("|u1", {0, 10, 200, 255}));
  put(dir + "/b.npy", npy_of<uint8_t>("|u1", {0, 12, 200, 254}));
  CliResult r = run_cli({"compare", dir + "/a.npy", dir + "/b.npy"});
  EXPECT_EQ(r.status, 1) << describe(r);
  // MSE (4 + 1) / 4 = 1.25: PSNR 10 log10(255^2 / 1.25) = 47.1617 dB.
  EXPECT_NE(r.out.find("max|diff| 2 levels, mean|diff| 0.75, PSNR 47.1617 dB, 2 of 4 values differ"), std::string::npos)
      << r.out;
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--max-levels", "2"}).status, 0);
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--max-levels", "1"}).status, 1);
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--min-psnr", "47"}).status, 0);
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--min-psnr", "48"}).status, 1);
  // uint8 levels against float values: refused, saying why.
  put(dir + "/f.npy", npy_of<float>("<f4", {0.0f, 10.0f, 200.0f, 255.0f}));
  CliResult mixed = run_cli({"compare", dir + "/a.npy", dir + "/f.npy"});
  EXPECT_EQ(mixed.status, 1) << describe(mixed);
  EXPECT_NE(mixed.out.find("cannot compare a uint8 array (|u1) with a float array (<f4)"), std::string::npos)
      << mixed.out;
}

TEST(CliCompare, FileNamesAndPathsAreEscaped) {
  const std::string dir = temp_dir("cmpnames");
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/a " + dir + "/b").c_str()), 0);
  Image8 im;
  im.width = im.height = 2;
  im.channels = 3;
  im.pixels.assign(12, 7);
  const std::string osc = "\033]0;PWNED\007.png";
  const std::string forged = "x.png: ok\nPASS forged.png";
  for (const char* side : {"/a/", "/b/"}) write_png(dir + side + osc, im);
  write_png(dir + "/a/" + forged + ".png", im);
  put(dir + "/a/bad\033[31m.png", "not a png");
  put(dir + "/b/bad\033[31m.png", "not a png");
  CliResult r = run_cli({"compare", dir + "/a", dir + "/b"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\007'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\nPASS forged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS \\x1b]0;PWNED\\x07.png: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL x.png: ok\\x0aPASS forged.png.png: missing in " + dir + "/b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL bad\\x1b[31m.png: " + dir + "/a/bad\\x1b[31m.png: not a PNG file"), std::string::npos)
      << r.out;
  // Every line is one of the file lines or the summary.
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 4u) << r.out;
  // Two files named on the command line, and the paths of a usage error.
  CliResult two = run_cli({"compare", dir + "/a/" + osc, dir + "/b/" + osc});
  EXPECT_EQ(two.status, 0) << describe(two);
  EXPECT_EQ(two.out.find('\033'), std::string::npos) << two.out;
  CliResult missing = run_cli({"compare", dir + "/a/" + osc, dir + "/none\033[2J.png"});
  EXPECT_EQ(missing.status, 1) << describe(missing);
  EXPECT_EQ(missing.err.find('\033'), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("none\\x1b[2J.png: no such file or folder"), std::string::npos) << missing.err;
}

TEST(CliCompare, EqualInfinitiesAndNaNsAtTheSamePlaceAreEqual) {
  const std::string dir = temp_dir("cmpnan");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  put(dir + "/a.npy", npy_of<float>("<f4", {1.0f, inf, -inf, nan}));
  put(dir + "/b.npy", npy_of<float>("<f4", {1.0f, inf, -inf, nan}));
  CliResult same = run_cli({"compare", dir + "/a.npy", dir + "/b.npy"});
  EXPECT_EQ(same.status, 0) << describe(same);
  EXPECT_NE(same.out.find("max|diff| 0, mean|diff| 0, PSNR inf dB, 0 of 4 values differ"), std::string::npos)
      << same.out;
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/b.npy", "--min-psnr", "100"}).status, 0);
  // A NaN with another payload is still NaN; in float64 against float32 too.
  put(dir + "/d.npy", npy_of<double>("<f8", {1.0, double(inf), -double(inf), -std::nan("7")}));
  EXPECT_EQ(run_cli({"compare", dir + "/a.npy", dir + "/d.npy"}).status, 0);
  // NaN against a number, and inf against -inf or a number, differ.
  for (const std::vector<float>& other :
       {std::vector<float>{1.0f, inf, -inf, 0.0f}, std::vector<float>{1.0f, -inf, -inf, nan},
        std::vector<float>{1.0f, 3e38f, -inf, nan}}) {
    put(dir + "/c.npy", npy_of<float>("<f4", other));
    CliResult r = run_cli({"compare", dir + "/a.npy", dir + "/c.npy"});
    EXPECT_EQ(r.status, 1) << describe(r);
    EXPECT_NE(r.out.find("max|diff| inf, mean|diff| inf, PSNR -inf dB, 1 of 4 values differ"), std::string::npos)
        << r.out;
  }
}

TEST(CliCompare, EmptyArraysAreReadAndCompared) {
  const std::string dir = temp_dir("cmpempty");
  for (const std::string shape : {"(5, 0)", "(0, 5)", "(0,)", "(2, 0, 3)"}) {
    put(dir + "/a.npy", npy_file("<f4", shape, ""));
    NpyArray a = read_npy(dir + "/a.npy");
    EXPECT_TRUE(a.bytes.empty()) << shape;
    EXPECT_EQ(read_npy_tensor(dir + "/a.npy").numel(), 0) << shape;
    put(dir + "/b.npy", npy_file("<f4", shape, ""));
    CliResult r = run_cli({"compare", dir + "/a.npy", dir + "/b.npy"});
    EXPECT_EQ(r.status, 0) << shape << ": " << describe(r);
    EXPECT_NE(r.out.find("0 of 0 values differ"), std::string::npos) << r.out;
  }
  EXPECT_EQ(read_npy(dir + "/a.npy").shape, (std::vector<int64_t>{2, 0, 3}));
  // A zero-element shape does not excuse a missing payload elsewhere.
  put(dir + "/c.npy", npy_file("<f4", "(5, 1)", ""));
  EXPECT_THROW(read_npy(dir + "/c.npy"), Error);
}

TEST(PngRead, ExtraImageDataIsAnError) {
  const std::string dir = temp_dir("pngextra");
  PngSpec s = gray16(4, 4, 0);
  s.extra_chunks = {{"tEXt", std::string("Comment\0hello", 13)}, {"gAMA", be32(45455)}};
  put(dir + "/good.png", png_file(s));
  EXPECT_EQ(read_error(dir + "/good.png"), "");
  CliResult good = run_cli({"compare", dir + "/good.png", dir + "/good.png"});
  EXPECT_EQ(good.status, 0) << describe(good);
  const std::string raw = png_raw_image(s);
  // More rows in the zlib stream than the image has; bytes after the zlib stream in the IDAT chunk.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"long.png", png_file(s, png_deflate(raw + std::string(raw.size(), '\x01')))},
      {"trailing.png", png_file(s, png_deflate(raw) + "trailing bytes")}};
  for (const auto& [name, bytes] : cases) {
    put(dir + "/" + name, bytes);
    put(dir + "/2" + name, bytes);
    const std::string msg = read_error(dir + "/" + name);
    EXPECT_NE(msg.find(dir + "/" + name + ": corrupt or unreadable PNG"), std::string::npos) << name << ": " << msg;
    CliResult r = run_cli({"compare", dir + "/" + name, dir + "/2" + name});
    EXPECT_EQ(r.status, 1) << name << ": " << describe(r);
    EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  }
}
