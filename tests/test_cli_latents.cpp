// `sg2 generate --save-latents FILE.npz [--save-styles]`, `--ws FILE.npz` reading it back, and
// `--size`, end to end with the bundled model (models/digits32, class-conditional) on the CPU: the
// archive's arrays against what they must be (numpy's z, the one-hot c, the --save-ws files, the
// styles recomputed from w and the model's affine weights), read by sg2's own readers (never
// skipped) and by numpy.load where it is installed; the same PNG bytes from the archive's w;
// savez_compressed archives; shards; and the bad-input lines (issue 25).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "readers/zip_reader.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/model.h"
#include "sg2/npy.h"
#include "sg2/npz_writer.h"
#include "sg2/styles.h"
#include "test_cli_run.h"
#include "util/file_util.h"
#include "util/host_memory.h"

using namespace sg2;
using namespace sg2::test;

namespace {

/// Every member of an .npz by name (stored members, CRC-checked by the zip reader).
struct Archive {
  std::map<std::string, NpyArray> numeric;        // the numeric arrays, parsed
  std::map<std::string, std::string> raw_member;  // every member's .npy bytes
};

Archive read_archive(const std::string& path) {
  Archive a;
  detail::MappedFile f(path);
  readers::ZipArchive zip(f.data(), f.size(), path);
  for (const readers::ZipEntry& e : zip.entries()) {
    const std::string name = e.name.substr(0, e.name.size() - 4);
    const std::string_view v = zip.data(e);
    a.raw_member[name] = std::string(v);
    if (std::string(v).find("'<U") == std::string::npos)
      a.numeric[name] = parse_npy(reinterpret_cast<const uint8_t*>(v.data()), v.size(), name);
  }
  return a;
}

std::vector<float> floats(const NpyArray& a) {
  EXPECT_EQ(a.dtype, "<f4");
  std::vector<float> v(a.bytes.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), a.bytes.data(), a.bytes.size());
  return v;
}

std::vector<std::string> base_args(const std::string& outdir) {
  return {"generate", "--network", digits32(), "--device", "cpu",  "--class",
          "3",        "--batch",   "4",        "--outdir", outdir, "--quiet"};
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string seed_png(int s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "seed%04d.png", s);
  return buf;
}

/// numpy.load's lines for an archive (tests/check_latents_npz.py), "" when no numpy is found.
std::string numpy_lines(const std::string& npz) {
  for (const std::string& py : {std::string(SG2_PYTHON), std::string("/usr/bin/python3")}) {
    if (py.empty() || !file_exists(py)) continue;
    const CliResult r = run_cli({source_path("tests/check_latents_npz.py"), npz}, {}, py);
    if (r.status == 77) continue;
    EXPECT_EQ(r.status, 0) << describe(r);
    return r.out;
  }
  return "";
}

const std::vector<uint32_t> kSeeds = {0, 1, 2, 3, 4, 9};

/// One backend's archive (`env`: SG2_CPU_REFERENCE=0 the oneDNN path where built, 1 the reference ops).
void check_archive(const std::string& dir, const std::string& env) {
  const std::string npz = dir + "/fakes.npz";
  CliResult r = run_cli(plus(base_args(dir + "/fakes.zip"),
                             {"--seeds", "0-4,9", "--trunc", "0.7", "--save-latents", npz, "--save-styles"}),
                        {env});
  ASSERT_EQ(r.status, 0) << describe(r);
  ASSERT_TRUE(file_exists(dir + "/fakes.zip"));
  // the w it holds is the ws each image had: the --save-ws files of the same run into a folder
  r = run_cli(plus(base_args(dir + "/ws"), {"--seeds", "0-4,9", "--trunc", "0.7", "--save-ws"}), {env});
  ASSERT_EQ(r.status, 0) << describe(r);

  const Archive a = read_archive(npz);
  const int N = int(kSeeds.size());
  const Model model = load_model(digits32());
  const ModelConfig& cfg = model.config;
  ASSERT_EQ(a.numeric.at("seeds").dtype, "<u4");
  ASSERT_EQ(a.numeric.at("seeds").bytes.size(), size_t(N) * 4);
  EXPECT_EQ(std::memcmp(a.numeric.at("seeds").bytes.data(), kSeeds.data(), kSeeds.size() * 4), 0);
  EXPECT_EQ(a.numeric.at("z").shape, (std::vector<int64_t>{N, cfg.z_dim}));
  EXPECT_EQ(floats(a.numeric.at("z")), z_from_seeds(kSeeds, cfg.z_dim).vec());  // numpy's z, bit for bit
  EXPECT_EQ(floats(a.numeric.at("c")), one_hot(std::vector<int>(size_t(N), 3), cfg.c_dim).vec());
  const std::vector<float> w = floats(a.numeric.at("w"));
  EXPECT_EQ(a.numeric.at("w").shape, (std::vector<int64_t>{N, cfg.num_ws, cfg.w_dim}));
  const size_t row = size_t(cfg.num_ws) * cfg.w_dim;
  for (int i = 0; i < N; ++i) {
    char name[40];
    std::snprintf(name, sizeof name, "/ws/seed%04u_ws.npy", kSeeds[size_t(i)]);
    const Tensor t = read_npy_tensor(dir + name);
    ASSERT_EQ(size_t(t.numel()), row);
    EXPECT_TRUE(std::equal(t.vec().begin(), t.vec().end(), w.begin() + i * row)) << name;
  }
  // the styles: every layer's affine of its ws row (torgb times 1/sqrt(in)), in sg2/styles.h order
  const std::vector<StyleLayer> layers = style_layers(cfg);
  const int64_t S = style_dims(cfg);
  EXPECT_EQ(a.numeric.at("s").shape, (std::vector<int64_t>{N, S}));
  std::vector<int64_t> offsets(layers.size() + 1);
  std::memcpy(offsets.data(), a.numeric.at("s_offsets").bytes.data(), offsets.size() * 8);
  const std::vector<float> s = floats(a.numeric.at("s"));
  std::string names;
  double worst = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    names += (l ? "," : "") + layers[l].name;
    EXPECT_EQ(offsets[l], layers[l].offset);
    const Tensor& A = model.at("synthesis." + layers[l].name + ".affine.weight");
    const Tensor& B = model.at("synthesis." + layers[l].name + ".affine.bias");
    const bool torgb = layers[l].name.find("torgb") != std::string::npos;
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < layers[l].dims; ++j) {
        double acc = 0;
        for (int k = 0; k < cfg.w_dim; ++k)
          acc += double(A[int64_t(j) * cfg.w_dim + k]) * w[i * row + size_t(layers[l].w_index) * cfg.w_dim + size_t(k)];
        double want = acc / std::sqrt(double(cfg.w_dim)) + B[j];
        if (torgb) want /= std::sqrt(double(layers[l].dims));
        worst = std::max(worst, std::fabs(want - s[size_t(i * S + layers[l].offset + j)]) / (1 + std::fabs(want)));
      }
  }
  EXPECT_LT(worst, 1e-5) << env;
  EXPECT_EQ(offsets.back(), S);
  EXPECT_EQ(names.substr(0, 35), "b4.conv1,b4.torgb,b8.conv0,b8.conv1");
  const std::string& u = a.raw_member.at("s_layers");
  EXPECT_NE(u.find("'descr': '<U9'"), std::string::npos);  // the longest name, "b16.conv0", has 9 characters
  // numpy.load reads the same arrays
  const std::string lines = numpy_lines(npz);
  if (!lines.empty()) {
    const std::vector<float> z = z_from_seeds(kSeeds, cfg.z_dim).vec();
    EXPECT_NE(lines.find("z <f4 6x512 " + detail::sha256_hex(reinterpret_cast<const uint8_t*>(z.data()), z.size() * 4)),
              std::string::npos)
        << lines;
    EXPECT_NE(lines.find("w <f4 6x8x512"), std::string::npos) << lines;
    EXPECT_NE(lines.find("s_layers= " + names), std::string::npos) << lines;
  }
}

TEST(CliLatents, TheArchiveHoldsTheRunsLatents) {
  check_archive(temp_dir("cli_latents"), "SG2_CPU_REFERENCE=0");
  check_archive(temp_dir("cli_latents_ref"), "SG2_CPU_REFERENCE=1");
}

/// The PNGs of `dir`'s seeds, in order, and those of a --ws run's rows.
void expect_same_pngs(const std::string& seed_dir, const std::string& ws_dir, const std::string& what) {
  for (size_t i = 0; i < kSeeds.size(); ++i) {
    char ws[32];
    std::snprintf(ws, sizeof ws, "/ws%04zu.png", i);
    const std::string a = slurp(seed_dir + "/" + seed_png(int(kSeeds[i]))), b = slurp(ws_dir + ws);
    EXPECT_FALSE(a.empty()) << what;
    EXPECT_TRUE(a == b) << what << ": row " << i << " differs from its seed's PNG";
  }
}

TEST(CliLatents, WsFromTheArchiveGivesTheSamePngs) {
  const std::string dir = temp_dir("cli_latents_ws");
  for (const std::string noise : {"const", "none"}) {
    const std::string npz = dir + "/" + noise + ".npz";
    CliResult r =
        run_cli(plus(base_args(dir + "/seeds_" + noise), {"--seeds", "0-4,9", "--trunc", "0.6", "--noise-mode", noise,
                                                          "--save-latents", npz, "--save-styles"}));
    ASSERT_EQ(r.status, 0) << describe(r);
    std::vector<std::string> ws_args = {
        "generate",     "--network", digits32(), "--device",          "cpu", "--ws", npz,
        "--noise-mode", noise,       "--outdir", dir + "/ws_" + noise};
    r = run_cli(ws_args);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_NE((r.out + r.err).find("array 'w' of the .npz"), std::string::npos) << describe(r);
    expect_same_pngs(dir + "/seeds_" + noise, dir + "/ws_" + noise, noise + " noise");
  }
}

/// A zip with one DEFLATE member (numpy.savez_compressed's layout) holding `npy`, plus a stored one.
std::string compressed_npz(const std::string& npy, uint64_t claim_size = 0) {
  std::string def(npy.size() + 1024, '\0');
  z_stream s{};
  deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(npy.data()));
  s.avail_in = uInt(npy.size());
  s.next_out = reinterpret_cast<Bytef*>(def.data());
  s.avail_out = uInt(def.size());
  deflate(&s, Z_FINISH);
  def.resize(s.total_out);
  deflateEnd(&s);
  const uint32_t crc = uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(npy.data()), uInt(npy.size())));
  const uint64_t usize = claim_size ? claim_size : npy.size();
  const bool z64 = usize >= 0xffffffffu;
  auto le = [](std::string& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(char(v >> (8 * i)));
  };
  const std::string name = "w.npy";
  std::string out, cd;
  le(out, 0x04034b50, 4), le(out, 20, 2), le(out, 0, 2), le(out, 8, 2), le(out, 0, 4), le(out, crc, 4);
  le(out, def.size(), 4), le(out, z64 ? 0xffffffffu : usize, 4), le(out, name.size(), 2), le(out, 0, 2);
  out += name + def;
  le(cd, 0x02014b50, 4), le(cd, 20, 2), le(cd, 20, 2), le(cd, 0, 2), le(cd, 8, 2), le(cd, 0, 4), le(cd, crc, 4);
  le(cd, def.size(), 4), le(cd, z64 ? 0xffffffffu : usize, 4), le(cd, name.size(), 2), le(cd, z64 ? 12 : 0, 2);
  le(cd, 0, 2), le(cd, 0, 2), le(cd, 0, 2), le(cd, 0, 4), le(cd, 0, 4);
  cd += name;
  if (z64) le(cd, 1, 2), le(cd, 8, 2), le(cd, usize, 8);
  const uint64_t cd_off = out.size();
  out += cd;
  le(out, 0x06054b50, 4), le(out, 0, 4), le(out, 1, 2), le(out, 1, 2), le(out, cd.size(), 4), le(out, cd_off, 4);
  le(out, 0, 2);
  return out;
}

TEST(CliLatents, CompressedArchivesAreRead) {
  const std::string dir = temp_dir("cli_latents_z");
  const std::string npz = dir + "/l.npz";
  CliResult r = run_cli(plus(base_args(dir + "/seeds"), {"--seeds", "0-4,9", "--save-latents", npz}));
  ASSERT_EQ(r.status, 0) << describe(r);
  const Archive a = read_archive(npz);
  const std::string packed = compressed_npz(a.raw_member.at("w"));
  {
    std::ofstream f(dir + "/c.npz", std::ios::binary);
    f << packed;
  }
  r = run_cli(
      {"generate", "--network", digits32(), "--device", "cpu", "--ws", dir + "/c.npz", "--outdir", dir + "/ws"});
  ASSERT_EQ(r.status, 0) << describe(r);
  expect_same_pngs(dir + "/seeds", dir + "/ws", "savez_compressed");
  // a corrupt compressed stream: one line naming the array
  std::string bad = packed;
  bad[40] = char(bad[40] ^ 0x55);
  bad[41] = char(bad[41] ^ 0x55);
  std::ofstream(dir + "/bad.npz", std::ios::binary) << bad;
  r = run_cli(
      {"generate", "--network", digits32(), "--device", "cpu", "--ws", dir + "/bad.npz", "--outdir", dir + "/x"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(dir + "/bad.npz: array 'w': "), std::string::npos) << r.err;
  // a member claiming more bytes than memory holds: refused before anything is allocated
  std::ofstream(dir + "/huge.npz", std::ios::binary) << compressed_npz(a.raw_member.at("w"), uint64_t(1) << 55);
  r = run_cli(
      {"generate", "--network", digits32(), "--device", "cpu", "--ws", dir + "/huge.npz", "--outdir", dir + "/y"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("inflating array 'w' needs 36028797018963968 bytes of memory, more than the "),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(file_exists(dir + "/x/ws0000.png") || file_exists(dir + "/y/ws0000.png"));
}

TEST(CliLatents, ShardsAndDatasetZipsNameTheirArchives) {
  const std::string dir = temp_dir("cli_latents_shard");
  CliResult r = run_cli(plus(base_args(dir + "/fakes.zip"),
                             {"--seeds", "0-4,9", "--shard", "1/2", "--save-latents", dir + "/fakes.npz"}));
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(file_exists(dir + "/fakes-shard1of2.zip"));
  const Archive a = read_archive(dir + "/fakes-shard1of2.npz");
  const std::vector<uint32_t> part = {3, 4, 9};
  ASSERT_EQ(a.numeric.at("seeds").bytes.size(), 12u);
  EXPECT_EQ(std::memcmp(a.numeric.at("seeds").bytes.data(), part.data(), 12), 0);
  EXPECT_FALSE(file_exists(dir + "/fakes.npz"));
}

TEST(CliLatents, SizeWritesBoxDownscaledImages) {
  const std::string dir = temp_dir("cli_latents_size");
  CliResult r = run_cli(plus(base_args(dir + "/full"), {"--seeds", "0-4,9"}));
  ASSERT_EQ(r.status, 0) << describe(r);
  for (const std::string size : {"16", "8x8"}) {
    const int f = size == "16" ? 2 : 4;
    r = run_cli(plus(base_args(dir + "/s" + size), {"--seeds", "0-4,9", "--size", size}));
    ASSERT_EQ(r.status, 0) << describe(r);
    for (uint32_t s : kSeeds) {
      const Image8 full = read_png(dir + "/full/" + seed_png(int(s)));
      const Image8 small = read_png(dir + "/s" + size + "/" + seed_png(int(s)));
      ASSERT_EQ(small.width, 32 / f);
      ASSERT_EQ(small.height, 32 / f);
      bool same = true;
      for (int y = 0; y < small.height; ++y)
        for (int x = 0; x < small.width; ++x)
          for (int c = 0; c < 3; ++c) {
            unsigned sum = 0;
            for (int i = 0; i < f; ++i)
              for (int j = 0; j < f; ++j) sum += full.pixels[size_t(((y * f + i) * 32 + x * f + j) * 3 + c)];
            same = same && small.pixels[size_t((y * small.width + x) * 3 + c)] == (sum + f * f / 2) / (f * f);
          }
      EXPECT_TRUE(same) << "--size " << size << ", seed " << s;
    }
  }
}

/// A .npy header (version 1.0, padded to 64 bytes) for a C-order float32 array of `shape`.
std::string npy_header(const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  dict += "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string h = std::string("\x93NUMPY\x01\x00", 8);
  h += char(dict.size() & 0xff);
  h += char(dict.size() >> 8);
  return h + dict;
}

/// Writes a ZIP64 archive of one stored member 'w.npy' whose .npy file is `npy_head` followed by
/// `payload` bytes, as numpy.savez lays it out, without writing the payload: the file is sparse
/// (a hole where the data would be). `crc` is the CRC-32 the records claim. Returns the file's size.
uint64_t write_sparse_npz(const std::string& path, const std::string& npy_head, uint64_t payload, uint32_t crc) {
  auto le = [](std::string& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(char(uint8_t(v >> (8 * i))));
  };
  const std::string name = "w.npy";
  const uint64_t size = npy_head.size() + payload;
  std::string local;  // local header with a ZIP64 extra field (plain size, compressed size)
  le(local, 0x04034b50, 4), le(local, 45, 2), le(local, 0, 2), le(local, 0, 2), le(local, 0, 4), le(local, crc, 4);
  le(local, 0xffffffffu, 4), le(local, 0xffffffffu, 4), le(local, name.size(), 2), le(local, 20, 2);
  local += name;
  le(local, 1, 2), le(local, 16, 2), le(local, size, 8), le(local, size, 8);
  const uint64_t cd_offset = local.size() + size;
  std::string tail;
  le(tail, 0x02014b50, 4), le(tail, 45, 2), le(tail, 45, 2), le(tail, 0, 2), le(tail, 0, 2), le(tail, 0, 4);
  le(tail, crc, 4), le(tail, 0xffffffffu, 4), le(tail, 0xffffffffu, 4), le(tail, name.size(), 2), le(tail, 20, 2);
  le(tail, 0, 2), le(tail, 0, 2), le(tail, 0, 2), le(tail, 0, 4), le(tail, 0, 4);
  tail += name;
  le(tail, 1, 2), le(tail, 16, 2), le(tail, size, 8), le(tail, size, 8);
  const uint64_t cd_size = tail.size(), end64 = cd_offset + cd_size;
  le(tail, 0x06064b50, 4), le(tail, 44, 8), le(tail, 45, 2), le(tail, 45, 2), le(tail, 0, 4), le(tail, 0, 4);
  le(tail, 1, 8), le(tail, 1, 8), le(tail, cd_size, 8), le(tail, cd_offset, 8);
  le(tail, 0x07064b50, 4), le(tail, 0, 4), le(tail, end64, 8), le(tail, 1, 4);
  le(tail, 0x06054b50, 4), le(tail, 0, 4), le(tail, 1, 2), le(tail, 1, 2), le(tail, 0xffffffffu, 4);
  le(tail, 0xffffffffu, 4), le(tail, 0, 2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 0;
  const std::string head = local + npy_head;
  bool ok = ::pwrite(fd, head.data(), head.size(), 0) == ssize_t(head.size()) &&
            ::pwrite(fd, tail.data(), tail.size(), off_t(cd_offset)) == ssize_t(tail.size());
  ok = ::close(fd) == 0 && ok;
  return ok ? cd_offset + tail.size() : 0;
}

// --ws FILE.npz with a stored member (numpy.savez) whose rows take more memory than the host has
// (readers/latents.cpp from_npz: the header's shape against the memory available, before anything
// is read or allocated): one line naming the array, its shape and the bytes, exit 1, no image. The
// file holds every byte its header claims (the payload a hole of a sparse file, so the test writes
// a few hundred bytes); its CRC is never checked, since it is refused before being read.
TEST(CliLatents, StoredArchiveLargerThanMemoryIsRefusedUnread) {
  const int64_t avail = detail::host_memory_available();
  if (avail <= 0) GTEST_SKIP() << "the memory available is unknown here";
  const std::string dir = temp_dir("cli_latents_stored_huge");
  // rows of [8, 512] float32 (the bundled model's W+): enough for the payload alone to be the memory
  // available; the reader's copy and its float32 tensor need twice that
  const int64_t rows = avail / (8 * 512 * 4) + 1;
  const std::vector<int64_t> shape = {rows, 8, 512};
  const uint64_t payload = uint64_t(rows) * 8 * 512 * 4;
  const std::string npz = dir + "/huge.npz";
  const uint64_t size = write_sparse_npz(npz, npy_header(shape), payload, 0);
  ASSERT_GT(size, payload) << "cannot write " << npz;
  struct stat st {};
  ASSERT_EQ(::stat(npz.c_str(), &st), 0);
  if (uint64_t(st.st_blocks) * 512 > (uint64_t(64) << 20)) {
    ::unlink(npz.c_str());
    GTEST_SKIP() << "this file system does not keep sparse files (" << st.st_blocks * 512 << " bytes allocated)";
  }
  const std::string report = dir + "/rss.txt";
  const CliResult r = run_cli(
      {report, SG2_CLI, "generate", "--network", digits32(), "--device", "cpu", "--ws", npz, "--outdir", dir + "/out"},
      {}, SG2_PEAK_RSS);
  ::unlink(npz.c_str());
  int status = -1;
  long long rss_kib = -1;
  std::istringstream(slurp(report)) >> status >> rss_kib;
  EXPECT_EQ(status, 1) << describe(r);
  const std::string need = std::to_string(payload * 2);
  EXPECT_NE(
      r.err.find(npz + ": array 'w' " + shape_to_string(shape) + " needs " + need + " bytes of memory, more than the "),
      std::string::npos)
      << r.err;
  // one error line (and the CLI's hint line after it)
  EXPECT_EQ(r.err.find("sg2 generate: error: --ws " + npz + ": array 'w' "), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
  EXPECT_NE(r.err.find("\nsg2 generate: hint: read fewer rows (split the archive) or use a machine with more memory\n"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(file_exists(dir + "/out/ws0000.png"));
  // refused before any large allocation: the process stayed small
  EXPECT_GT(rss_kib, 0);
  EXPECT_LT(rss_kib, 512 * 1024) << "peak RSS " << rss_kib << " KiB";
}

// The same layout where the header lies: it claims [2^40, 8, 512] over 4 rows of data (the CRC-32
// is right). A claim the file cannot hold is no size to reserve memory for: refused as a short
// payload, one line, before anything of the claimed size is allocated.
TEST(CliLatents, StoredArchiveWhoseHeaderLiesIsRefused) {
  const std::string dir = temp_dir("cli_latents_stored_lie");
  const std::vector<int64_t> shape = {int64_t(1) << 40, 8, 512};
  const uint64_t payload = 4 * 8 * 512 * 4;
  const std::string npy = npy_header(shape) + std::string(payload, '\0');
  const uint32_t crc = uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(npy.data()), uInt(npy.size())));
  const std::string npz = dir + "/lie.npz";
  ASSERT_GT(write_sparse_npz(npz, npy_header(shape), payload, crc), payload);
  const CliResult r =
      run_cli({"generate", "--network", digits32(), "--device", "cpu", "--ws", npz, "--outdir", dir + "/out"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(npz + ": array 'w': .npy payload of " + std::to_string(payload) +
                       " bytes is shorter than its shape [1099511627776, 8, 512] needs"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(file_exists(dir + "/out/ws0000.png"));
}

/// Files named like a temporary (`*.tmp.*`) in `dir`.
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).find(".tmp.") != std::string::npos) out.push_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

TEST(CliLatents, NoHalfArchiveOnAFileSizeLimitOrAnInterrupt) {
  const std::string dir = temp_dir("cli_latents_fail");
  // ulimit -f: the archive (8 images x 8 x 512 float32 = 128 KiB of w) cannot be written; the PNGs can
  CliResult r = run_cli({"-c", "ulimit -f 64 && exec '" + std::string(SG2_CLI) + "' generate --network '" + digits32() +
                                   "' --device cpu --class 1 --seeds 0-7 --outdir '" + dir + "/o' --save-latents '" +
                                   dir + "/o/l.npz' -q"},
                        {}, "/bin/sh");
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(dir + "/o/l.npz: cannot write: File too large"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(file_exists(dir + "/o/l.npz"));
  EXPECT_TRUE(temporaries(dir + "/o").empty());
  // SIGTERM while the archive streams: its temporary and the dataset zip's are removed, nothing is left
  const std::string model = write_tiny_model(dir);
  const std::string script = "'" + std::string(SG2_CLI) + "' generate --network '" + model +
                             "' --device cpu --seeds 0-500000 --outdir '" + dir + "/d.zip' --save-latents '" + dir +
                             "/d.npz' -q & p=$!; n=0; while [ ! -e '" + dir + "/d.npz.tmp.'$p ] && [ $n -lt 2400 ]; " +
                             "do sleep 0.05; n=$((n+1)); done; sleep 0.5; kill -TERM $p; wait $p";
  r = run_cli({"-c", script}, {}, "/bin/sh");
  EXPECT_EQ(r.status, 128 + 15) << describe(r);
  EXPECT_NE(r.err.find("interrupted by SIGTERM"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the unfinished archives " + dir + "/d.zip and " + dir + "/d.npz were removed"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(file_exists(dir + "/d.npz") || file_exists(dir + "/d.zip"));
  EXPECT_TRUE(temporaries(dir).empty()) << temporaries(dir).size() << " temporary files left";
}

TEST(CliLatents, BadInputIsOneLine) {
  const std::string dir = temp_dir("cli_latents_bad");
  const std::string npz = dir + "/l.npz";
  ASSERT_EQ(run_cli(plus(base_args(dir + "/ok"), {"--seeds", "0-4,9", "--save-latents", npz})).status, 0);
  const std::string whole = slurp(npz);
  auto ws_run = [&](const std::string& file) {
    return run_cli({"generate", "--network", digits32(), "--device", "cpu", "--ws", file, "--outdir", dir + "/out"});
  };
  auto one_line = [](const CliResult& r) { return std::count(r.err.begin(), r.err.end(), '\n') == 1; };
  // truncated
  std::ofstream(dir + "/cut.npz", std::ios::binary) << whole.substr(0, whole.size() / 2);
  CliResult r = ws_run(dir + "/cut.npz");
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(dir + "/cut.npz: corrupt zip archive: no end-of-central-directory record"), std::string::npos)
      << r.err;
  EXPECT_TRUE(one_line(r)) << r.err;
  // no w: an archive of seeds and z only
  {
    NpzWriter o(dir + "/now.npz", {{"seeds", "<u4", {1}}, {"z", "<f4", {1, 2}}});
    const uint32_t s = 1;
    const float z[2] = {0, 1};
    o.append(0, &s, 4);
    o.append(1, z, 8);
    o.finish();
  }
  r = ws_run(dir + "/now.npz");
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find("now.npz: an .npz with arrays 'seeds', 'z', none called 'w'"), std::string::npos) << r.err;
  // w of the wrong shape
  {
    NpzWriter o(dir + "/shape.npz", {{"w", "<f4", {2, 7, 512}}});
    std::vector<float> w(2 * 7 * 512, 0.5f);
    o.append(0, w.data(), w.size() * 4);
    o.finish();
  }
  r = ws_run(dir + "/shape.npz");
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("shape.npz: shape [2, 7, 512] does not fit this model: expected [N, 512] (W) or [N, 8, 512]"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(file_exists(dir + "/out/ws0000.png"));
  // --save-latents to a folder that does not exist: nothing written, not even the images' archive
  r = run_cli(plus(base_args(dir + "/d.zip"), {"--seeds", "0-3", "--save-latents", dir + "/missing/l.npz"}));
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_NE(r.err.find(dir + "/missing/l.npz: cannot write"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/d.zip"));
  // usage errors: exit 2 before the model loads
  r = run_cli(plus(base_args(dir + "/u"), {"--seeds", "0-3", "--save-styles"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("--save-styles adds the styles to the archive of --save-latents FILE.npz"), std::string::npos)
      << r.err;
  r = run_cli(plus(base_args(dir + "/u.zip"), {"--seeds", "0-3", "--save-ws"}));  // names the archive that holds ws
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("not into a dataset archive (--outdir " + dir +
                       "/u.zip); --save-latents FILE.npz writes the run's ws in one archive beside it"),
            std::string::npos)
      << r.err;
  r = run_cli(plus(base_args(dir + "/u"), {"--seeds", "0-3", "--save-latents", dir + "/l.txt"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("the archive's name must end in .npz"), std::string::npos) << r.err;
  r = run_cli(plus(base_args(dir + "/u"), {"--seeds", "0-3", "--size", "12"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("--size 12: not a divisor of the model's 32x32 resolution"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sizes that work: 32, 16, 8, 4, 2, 1"), std::string::npos) << r.err;
  r = run_cli(plus(base_args(dir + "/u"), {"--seeds", "0-3", "--size", "16x8"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  for (const char* bad : {"abc", "16x", "x16", "8x8x8", "1.5", ""}) {  // the syntax, before the model loads
    r = run_cli(plus(base_args(dir + "/u"), {"--seeds", "0-3", "--size", bad}));
    EXPECT_EQ(r.status, 2) << describe(r);
    EXPECT_NE(r.err.find("--size '" + std::string(bad) + "': expected N (the larger side) or WxH"), std::string::npos)
        << r.err;
  }
  r = run_cli(plus(base_args(dir + "/u"), {"--seeds", "0-3", "--size", "16", "--format", "npy"}));
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_NE(r.err.find("--size downscales the uint8 images: use --format png or u8npy"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/u/seed0000.png"));
}

}  // namespace
