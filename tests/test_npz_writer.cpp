// Tests of the streamed .npz writer (formats/npz_writer.cpp, sg2/npz_writer.h): archives read back
// by sg2's own zip and .npy readers (never skipped) and by numpy.load (tests/check_latents_npz.py,
// skipped where numpy is missing), ZIP64 records, rows appended in pieces through small buffers,
// and no half archive: an unfinished writer, a short array, an unwritable folder, a write failure.
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "readers/zip_reader.h"
#include "sg2/error.h"
#include "sg2/npy.h"
#include "sg2/npz_writer.h"
#include "test_cli_run.h"
#include "test_util.h"
#include "util/file_util.h"

namespace sg2 {
namespace {

/// numpy.load's view of an archive (tests/check_latents_npz.py): its lines, or "" with *skipped
/// when no Python with numpy is found (SG2_PYTHON, then the system's /usr/bin/python3).
std::string numpy_lines(const std::string& npz, bool* skipped) {
  *skipped = false;
  for (const std::string& py : {std::string(SG2_PYTHON), std::string("/usr/bin/python3")}) {
    if (py.empty() || !test::file_exists(py)) continue;
    const test::CliResult r = test::run_cli({test::source_path("tests/check_latents_npz.py"), npz}, {}, py);
    if (r.status == 77) continue;
    EXPECT_EQ(r.status, 0) << test::describe(r);
    return r.out;
  }
  *skipped = true;
  return "";
}

std::string sha(const void* p, size_t n) { return detail::sha256_hex(static_cast<const uint8_t*>(p), n); }

struct Arrays {
  std::vector<uint32_t> seeds;
  std::vector<float> w;      // [n, 3, 5]
  std::vector<int64_t> off;  // [4]
  int n = 0;
};

Arrays sample(int n) {
  Arrays a;
  a.n = n;
  for (int i = 0; i < n; ++i) a.seeds.push_back(uint32_t(4000000000u + i));
  for (int i = 0; i < n * 15; ++i) a.w.push_back(0.25f * float(i) - 3.0f);
  a.off = {0, 7, 9, 1 << 20};
  return a;
}

/// Writes `a` row by row (the arrays interleaved, as generate does), with the given options.
void write_sample(const std::string& path, const Arrays& a, const NpzOptions& o) {
  NpzWriter npz(path, {{"seeds", "<u4", {a.n}}, {"w", "<f4", {a.n, 3, 5}}, {"names", "<U8", {2}}, {"off", "<i8", {4}}},
                o);
  EXPECT_EQ(npz.temp_path(), path + ".tmp." + std::to_string(::getpid()));
  std::vector<uint8_t> names(2 * 8 * 4, 0);
  const char* s[2] = {"b4.conv1", "b8"};
  for (int i = 0; i < 2; ++i)
    for (size_t k = 0; k < std::strlen(s[i]); ++k) names[size_t(i * 8 + int(k)) * 4] = uint8_t(s[i][k]);
  npz.append(2, names.data(), names.size());
  for (int i = 0; i < a.n; ++i) {
    npz.append(0, &a.seeds[size_t(i)], 4);
    npz.append(1, a.w.data() + size_t(i) * 15, 15 * 4);
  }
  npz.append(3, a.off.data(), 32);
  EXPECT_FALSE(test::file_exists(path));
  npz.finish();
  EXPECT_FALSE(test::file_exists(npz.temp_path()));
  EXPECT_EQ(test::slurp(path).size(), npz.file_bytes());
}

/// The archive through sg2's readers: the members in order, each CRC-checked, and the numeric arrays.
void check_with_sg2(const std::string& path, const Arrays& a, bool zip64) {
  detail::MappedFile f(path);
  readers::ZipArchive zip(f.data(), f.size(), path);
  ASSERT_EQ(zip.entries().size(), 4u);
  EXPECT_EQ(zip.entries()[0].name, "seeds.npy");
  EXPECT_EQ(zip.entries()[2].name, "names.npy");
  for (const readers::ZipEntry& e : zip.entries()) {
    EXPECT_EQ(e.method, 0);
    EXPECT_NO_THROW(zip.data(e));  // the CRC-32 matches
  }
  const std::string_view seeds = zip.data(zip.entries()[0]);
  const NpyArray s = parse_npy(reinterpret_cast<const uint8_t*>(seeds.data()), seeds.size(), "seeds");
  EXPECT_EQ(s.dtype, "<u4");
  EXPECT_EQ(s.shape, std::vector<int64_t>{a.n});
  EXPECT_EQ(std::memcmp(s.bytes.data(), a.seeds.data(), a.seeds.size() * 4), 0);
  const std::string_view wv = zip.data(zip.entries()[1]);
  const Tensor w = npy_float_tensor(parse_npy(reinterpret_cast<const uint8_t*>(wv.data()), wv.size(), "w"), "w");
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{a.n, 3, 5}));
  EXPECT_EQ(w.vec(), a.w);
  const std::string_view nv = zip.data(zip.entries()[2]);
  EXPECT_NE(std::string(nv).find("'descr': '<U8'"), std::string::npos);
  // ZIP64: the end records are there exactly when asked for (this archive is small).
  const std::string bytes = test::slurp(path);
  const bool has_end64 = bytes.find(std::string("PK\x06\x06", 4)) != std::string::npos;
  EXPECT_EQ(has_end64, zip64);
}

TEST(NpzWriter, SgReadersAndNumpyReadWhatItStreams) {
  const std::string dir = test::temp_dir("npz");
  for (const bool zip64 : {false, true}) {
    const Arrays a = sample(37);
    NpzOptions o;
    o.buffer_bytes = 100;  // rows cross buffer boundaries
    o.force_zip64 = zip64;
    const std::string path = dir + (zip64 ? "/z64.npz" : "/plain.npz");
    write_sample(path, a, o);
    check_with_sg2(path, a, zip64);
    // read_latents takes its 'w' (the other arrays are never parsed)
    bool skipped = false;
    const std::string lines = numpy_lines(path, &skipped);
    if (skipped) continue;
    EXPECT_NE(lines.find("seeds <u4 37 " + sha(a.seeds.data(), a.seeds.size() * 4)), std::string::npos) << lines;
    EXPECT_NE(lines.find("w <f4 37x3x5 " + sha(a.w.data(), a.w.size() * 4)), std::string::npos) << lines;
    EXPECT_NE(lines.find("names= b4.conv1,b8"), std::string::npos) << lines;
    EXPECT_NE(lines.find("off <i8 4 " + sha(a.off.data(), 32)), std::string::npos) << lines;
  }
}

TEST(NpzWriter, HeadersAreNumpysOwn) {
  // numpy.save's header for float32 (2, 3), byte for byte (numpy 1.24): the dict, spaces, '\n', 128 bytes
  const std::vector<uint8_t> h = npy_header_bytes("<f4", {2, 3});
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(std::string(h.begin(), h.end()),
            std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + std::string(128 - 11 - dict.size(), ' ') + "\n");
  const std::vector<uint8_t> h1 = npy_header_bytes("<u4", {5});
  const std::string dict1 = "{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }";
  EXPECT_EQ(std::string(h1.begin() + 10, h1.begin() + 10 + long(dict1.size())), dict1);
  EXPECT_EQ(h1.size(), 128u);
  EXPECT_EQ(npz_dtype_size("<U12"), 48u);
  EXPECT_EQ(npz_dtype_size("|S3"), 3u);
  EXPECT_EQ(npz_dtype_size("<i8"), 8u);
  EXPECT_THROW(npz_dtype_size("<U0"), Error);
  EXPECT_THROW(npz_dtype_size("<c8"), Error);
  EXPECT_THROW(npz_dtype_size(">f4"), Error);
}

TEST(NpzWriter, NothingHalfWritten) {
  const std::string dir = test::temp_dir("npz_bad");
  const std::string path = dir + "/x.npz";
  {  // destroyed before finish(): the temporary is removed, nothing at path
    NpzWriter npz(path, {{"w", "<f4", {2, 2}}});
    const float v[4] = {1, 2, 3, 4};
    npz.append(0, v, 16);
    EXPECT_TRUE(test::file_exists(npz.temp_path()));
  }
  EXPECT_FALSE(test::file_exists(path));
  EXPECT_FALSE(test::file_exists(path + ".tmp." + std::to_string(::getpid())));
  {  // a short array: finish() refuses, names it, removes the temporary
    NpzWriter npz(path, {{"seeds", "<u4", {3}}, {"w", "<f4", {3, 2}}});
    const uint32_t s[3] = {1, 2, 3};
    npz.append(0, s, 12);
    const float w[2] = {0, 1};
    npz.append(1, w, 8);
    EXPECT_EQ(npz.remaining(1), 16u);
    try {
      npz.finish();
      ADD_FAILURE() << "finish() of a short array";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("array 'w.npy' got 8 of its 24 bytes"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(test::file_exists(npz.temp_path()));
    EXPECT_THROW(npz.append(0, s, 4), Error);
  }
  EXPECT_FALSE(test::file_exists(path));
  {  // more bytes than the shape holds: refused, the writer stays usable
    NpzWriter npz(path, {{"w", "<f4", {1}}});
    const float w[2] = {0, 1};
    EXPECT_THROW(npz.append(0, w, 8), Error);
    npz.append(0, w, 4);
    npz.finish();
    EXPECT_TRUE(test::file_exists(path));
  }
  // bad members, an unwritable folder
  EXPECT_THROW(NpzWriter(dir + "/y.npz", {}), Error);
  EXPECT_THROW(NpzWriter(dir + "/y.npz", {{"a/b", "<f4", {1}}}), Error);
  EXPECT_THROW(NpzWriter(dir + "/y.npz", {{"a", "<f4", {1}}, {"a", "<f4", {1}}}), Error);
  EXPECT_THROW(NpzWriter(dir + "/y.npz", {{"a", "<f4", {-1}}}), Error);
  EXPECT_THROW(NpzWriter(dir + "/y.npz", {{"a", "<f4", {int64_t(1) << 40, int64_t(1) << 40}}}), Error);
  try {
    NpzWriter(dir + "/missing/y.npz", {{"a", "<f4", {1}}});
    ADD_FAILURE() << "a missing folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find(dir + "/missing/y.npz: cannot write"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(test::file_exists(dir + "/y.npz"));
}

TEST(NpzWriter, AWriteFailureRemovesTheTemporary) {
  // A file-size limit (SIGXFSZ ignored, as sg2's CLI does): the write fails with EFBIG.
  const std::string dir = test::temp_dir("npz_fsize");
  const std::string path = dir + "/big.npz";
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*prev)(int) = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 1 << 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string what;
  std::string tmp;
  try {
    NpzWriter npz(path, {{"w", "<f4", {1 << 16}}});
    tmp = npz.temp_path();
    std::vector<float> v(1 << 16, 1.0f);
    npz.append(0, v.data(), v.size() * 4);
    npz.finish();
  } catch (const Error& e) {
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, prev);
  EXPECT_NE(what.find(path + ": cannot write: "), std::string::npos) << what;
  EXPECT_NE(what.find("ulimit -f"), std::string::npos) << what;
  EXPECT_FALSE(test::file_exists(path));
  EXPECT_FALSE(tmp.empty() || test::file_exists(tmp));
}

}  // namespace
}  // namespace sg2
