// Issue 25's features under hostile input (a review that fed them broken files): each test is the
// regression test of one bug found, the input that broke it built here from a fixture or from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <zlib.h>

#include "sg2/edit.h"
#include "sg2/error.h"
#include "sg2/latents.h"
#include "sg2/npy.h"
#include "sg2/npz_writer.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

bool has_text(const std::string& s, const std::string& t) { return s.find(t) != std::string::npos; }

void put_le32_at(std::string& s, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) s[at + k] = static_cast<char>((v >> (8 * k)) & 0xff);
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

// A numpy.savez_compressed archive whose 'w.npy' claims far more than its few hundred deflated bytes
// can inflate to (a zip bomb's lie) was allocated (and zeroed) whole before zlib found the data
// short: 3.9 GB of memory and 7 s for a 33 KB file claiming 4 GB (any claim below the memory
// available). It is refused by deflate's ratio before any allocation (64 MiB here, so that the
// memory check, which comes first, passes on any machine).
TEST(HostileI25, CompressedWsArchiveClaimingAHugeSizeIsRefusedUnread) {
  std::string bytes = slurp(source_path("tests/data/checkpoints/users/projected_w_compressed.npz"));
  const uint32_t claim = 0x04000000u;
  size_t patched = 0;
  for (size_t p = bytes.find("PK\x01\x02"); p != std::string::npos; p = bytes.find("PK\x01\x02", p + 4))
    if (bytes.compare(p + 46, 5, "w.npy") == 0) {
      put_le32_at(bytes, p + 24, claim);  // the central directory's uncompressed size
      ++patched;
    }
  ASSERT_EQ(patched, 1u);
  const std::string dir = temp_dir("hostile_bomb");
  write_bytes(dir + "/bomb.npz", bytes);
  try {
    parse_latents(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "bomb.npz");
    ADD_FAILURE() << "the bomb was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_file) << e.what();
    EXPECT_TRUE(has_text(e.message(), "bomb.npz: corrupt zip archive: entry 'w.npy' claims 67108864 bytes"))
        << e.message();
    EXPECT_TRUE(has_text(e.message(), "more than deflate can produce")) << e.message();
  }
  const std::string model = write_tiny_model(dir);
  const CliResult r = run_cli(
      {"generate", "--network", model, "--device", "cpu", "--ws", dir + "/bomb.npz", "--outdir", dir + "/o", "-q"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.err, "more than deflate can produce")) << r.err;
  EXPECT_FALSE(file_exists(dir + "/o"));
}

// A 0-d .npy (numpy.save of one number) as --edit ended in "dimension 0 out of range for shape []":
// no file named. It is a direction of the wrong shape, said as for [0] or [0, 512].
TEST(HostileI25, ZeroDimensionalEditDirectionIsAShapeErrorNamingTheFile) {
  const std::string dir = temp_dir("hostile_scalar");
  write_npy(dir + "/one.npy", Tensor(std::vector<int64_t>{}, std::vector<float>{2.0f}));
  const EditDirection d = read_edit_direction(dir + "/one.npy");
  EXPECT_EQ(d.values.ndim(), 0);
  EXPECT_EQ(d.components, 1);
  const std::string model = write_tiny_model(dir);  // num_ws 6, w_dim 8
  const CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0", "--edit",
                               dir + "/one.npy", "--outdir", dir + "/o", "-q"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "--edit " + dir + "/one.npy: a direction of shape [] does not fit this model")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(file_exists(dir + "/o"));
}

// An edit whose strength x direction stays finite in w but overflows the synthesis was blamed on
// "this model's own mapping network, so the model's weights overflow (a damaged checkpoint)": the
// latents had been moved by --edit, and the message now says so.
TEST(HostileI25, SynthesisOverflowAfterAnEditBlamesTheEdit) {
  const std::string dir = temp_dir("hostile_overflow");
  Tensor d({1, 512});
  for (int64_t i = 0; i < d.numel(); ++i) d[i] = 3e38f;
  write_npy(dir + "/huge.npy", d);
  const CliResult r = run_cli({"generate", "--network", digits32(), "--device", "cpu", "--seeds", "0", "--class", "1",
                               "--edit", dir + "/huge.npy", "--outdir", dir + "/o", "-q"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "gave NaN or infinite pixels: an edit direction (--edit) moved")) << r.err;
  EXPECT_FALSE(has_text(r.err, "model's weights overflow")) << r.err;
}

// Blending a square and a non-square network of the same img_resolution failed on the first tensor
// whose shape differed ("tensor synthesis.b4.const is [..] vs [..]"), never saying non-square; and
// a blend of two non-square networks was announced as img_resolution x img_resolution.
TEST(HostileI25, BlendSaysNonSquareAndItsSize) {
  const std::string dir = temp_dir("hostile_blend");
  ModelConfig sq = make_config(16, 64, 8, 8, 8, 0, 3, 2, Architecture::skip, std::nullopt, 0);
  ModelConfig tall = sq;
  tall.img_height = 16;
  tall.img_width = 8;
  tall.validate();
  save_model_file(dir + "/sq.safetensors", make_random_model(sq, 1));
  save_model_file(dir + "/tall.safetensors", make_random_model(tall, 2));
  CliResult r = run_cli({"blend", "--low", dir + "/sq.safetensors", "--high", dir + "/tall.safetensors", "--at", "8",
                         "--out", dir + "/c.safetensors"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "(high): image size (width x height) 16x16 vs 8x16 (non-square)")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(file_exists(dir + "/c.safetensors"));
  r = run_cli({"blend", "--low", dir + "/tall.safetensors", "--high", dir + "/tall.safetensors", "--at", "8", "--out",
               dir + "/c.safetensors"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "c.safetensors (8x16): layers from")) << r.out;
  EXPECT_EQ(load_model_file(dir + "/c.safetensors").config.width(), 8);
}

// A GANSpace .npz holding 'lat_comp.npy' twice (a zip may repeat a name): numpy.load reads the last
// (Python's zipfile keeps the last of a name), as sg2's --ws reader does; the --edit reader took
// the first, so sg2 and the Python tools edited along two different directions. Now the last.
TEST(HostileI25, RepeatedGanspaceMemberIsReadAsNumpyReadsIt) {
  const std::string dir = temp_dir("hostile_dup");
  const std::string path = dir + "/dup.npz";
  {
    NpzWriter npz(path, {{"lat_comp", "<f4", {1, 8}}, {"lat_comq", "<f4", {1, 8}}});
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 8; ++i) {
        const float v = k == 0 ? 1.0f : float(10 + i);
        npz.append(size_t(k), &v, 4);
      }
    npz.finish();
  }
  std::string bytes = slurp(path);
  size_t renamed = 0;
  for (size_t p = bytes.find("lat_comq.npy"); p != std::string::npos; p = bytes.find("lat_comq.npy", p + 1)) {
    bytes[p + 7] = 'p';
    ++renamed;
  }
  ASSERT_EQ(renamed, 2u);  // its local header and its central directory record
  write_bytes(path, bytes);
  const EditDirection d = read_edit_direction(path);
  ASSERT_EQ(d.values.shape(), (std::vector<int64_t>{1, 8}));  // K = 1: the array whole
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.values[i], float(10 + i)) << i;
}

namespace {

void put_le16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>(v >> 8));
}

void put_le32(std::string& s, uint32_t v) {
  put_le16(s, static_cast<uint16_t>(v & 0xffff));
  put_le16(s, static_cast<uint16_t>(v >> 16));
}

uint32_t crc32_of(const std::string& d) {
  return static_cast<uint32_t>(::crc32(0L, reinterpret_cast<const Bytef*>(d.data()), static_cast<uInt>(d.size())));
}

/// A stored zip of `members` (name, bytes) as Python's zipfile writes one: ZIP64 records only for
/// more than 65,535 entries (none here), so exactly 65,535 entries leave the end record's count at
/// 0xffff with no ZIP64 locator.
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out, dir;
  for (const auto& [name, data] : members) {
    const uint32_t crc = crc32_of(data);
    const uint32_t at = static_cast<uint32_t>(out.size());
    put_le32(out, 0x04034b50);
    for (uint16_t v : {uint16_t(20), uint16_t(0), uint16_t(0), uint16_t(0), uint16_t(0x21)}) put_le16(out, v);
    put_le32(out, crc);
    put_le32(out, static_cast<uint32_t>(data.size()));
    put_le32(out, static_cast<uint32_t>(data.size()));
    put_le16(out, static_cast<uint16_t>(name.size()));
    put_le16(out, 0);
    out += name + data;
    put_le32(dir, 0x02014b50);
    for (uint16_t v : {uint16_t(20), uint16_t(20), uint16_t(0), uint16_t(0), uint16_t(0), uint16_t(0x21)})
      put_le16(dir, v);
    put_le32(dir, crc);
    put_le32(dir, static_cast<uint32_t>(data.size()));
    put_le32(dir, static_cast<uint32_t>(data.size()));
    put_le16(dir, static_cast<uint16_t>(name.size()));
    for (int k = 0; k < 4; ++k) put_le16(dir, 0);  // extra, comment, disk, internal attributes
    put_le32(dir, 0);                              // external attributes
    put_le32(dir, at);
    dir += name;
  }
  const uint32_t dir_at = static_cast<uint32_t>(out.size());
  out += dir;
  put_le32(out, 0x06054b50);
  put_le16(out, 0);
  put_le16(out, 0);
  put_le16(out, static_cast<uint16_t>(members.size()));
  put_le16(out, static_cast<uint16_t>(members.size()));
  put_le32(out, static_cast<uint32_t>(dir.size()));
  put_le32(out, dir_at);
  put_le16(out, 0);
  return out;
}

}  // namespace

// numpy.savez of exactly 65,535 arrays: Python's zipfile writes the count 0xffff in the plain end
// record and no ZIP64 records (it adds them only past 65,535), and sg2 refused the archive ("ZIP64
// end record locator missing"). The plain count stands now; a lying 0xffffffff size or offset
// without ZIP64 records is still refused.
TEST(HostileI25, ZipOfExactly65535EntriesWithoutZip64IsRead) {
  Tensor w({1, 6, 8});
  for (int64_t i = 0; i < w.numel(); ++i) w[i] = 0.25f * float(i);
  const std::vector<uint8_t> wb = npy_bytes(w);
  std::vector<std::pair<std::string, std::string>> members;
  char name[32];
  for (int i = 0; i < 65534; ++i) {
    std::snprintf(name, sizeof name, "a%05d.npy", i);
    members.emplace_back(name, "");
  }
  members.emplace_back("w.npy", std::string(wb.begin(), wb.end()));
  const std::string zip = stored_zip(members);
  ASSERT_EQ(zip.compare(zip.size() - 22, 4, "PK\x05\x06"), 0);
  const Latents l = parse_latents(reinterpret_cast<const uint8_t*>(zip.data()), zip.size(), "many.npz");
  EXPECT_EQ(l.values.shape(), w.shape());
  EXPECT_EQ(std::memcmp(l.values.data(), w.data(), sizeof(float) * size_t(w.numel())), 0);
  std::string lying = zip;
  put_le32_at(lying, lying.size() - 6, 0xffffffffu);  // the directory's offset, with no ZIP64 record
  try {
    parse_latents(reinterpret_cast<const uint8_t*>(lying.data()), lying.size(), "lying.npz");
    ADD_FAILURE() << "a 0xffffffff offset without ZIP64 records was read";
  } catch (const Error& e) {
    EXPECT_TRUE(has_text(e.message(), "lying.npz: corrupt zip archive: ZIP64 end record locator missing"))
        << e.message();
  }
}

// An output named as the command's own input is refused before anything is written, as sg2 convert
// does: blend --out equal to --low or --high, generate --save-latents equal to --ws (the archive would
// replace the file it is read from).
TEST(HostileI25, OutputsNeverReplaceTheirInput) {
  const std::string dir = temp_dir("hostile_same");
  ModelConfig cfg = make_config(16, 64, 8, 8, 8, 0, 3, 2, Architecture::skip, std::nullopt, 0);
  save_model_file(dir + "/a.safetensors", make_random_model(cfg, 1));
  save_model_file(dir + "/b.safetensors", make_random_model(cfg, 2));
  const std::string a_before = slurp(dir + "/a.safetensors");
  for (const char* side : {"--low", "--high"}) {
    const std::string other = std::string(side) == "--low" ? "--high" : "--low";
    const CliResult r = run_cli({"blend", side, dir + "/a.safetensors", other, dir + "/b.safetensors", "--at", "8",
                                 "--out", dir + "/./a.safetensors"});
    EXPECT_EQ(r.status, 2) << describe(r);
    EXPECT_TRUE(has_text(r.err, std::string("is the ") + side + " network's file: choose another name")) << r.err;
  }
  EXPECT_EQ(slurp(dir + "/a.safetensors"), a_before);

  const std::string ws = dir + "/latents.npz";
  CliResult r = run_cli({"generate", "--network", dir + "/a.safetensors", "--device", "cpu", "--seeds", "0-2",
                         "--outdir", dir + "/g", "--save-latents", ws, "-q"});
  ASSERT_EQ(r.status, 0) << describe(r);
  const std::string ws_before = slurp(ws);
  r = run_cli({"generate", "--network", dir + "/a.safetensors", "--device", "cpu", "--ws", ws, "--outdir", dir + "/h",
               "--save-latents", ws});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(has_text(r.err, "is the --ws input: choose another name")) << r.err;
  EXPECT_EQ(slurp(ws), ws_before);
  EXPECT_FALSE(file_exists(dir + "/h"));
}

// An .npz of seeds and z but no w (a latent list of another tool): refused naming its arrays, with the
// hint that its images come from --seeds.
TEST(HostileI25, ArchiveOfSeedsWithoutWPointsToSeeds) {
  const std::string dir = temp_dir("hostile_now");
  const std::string path = dir + "/seeds_z.npz";
  {
    NpzWriter npz(path, {{"seeds", "<u4", {2}}, {"z", "<f4", {2, 4}}});
    const uint32_t seeds[2] = {3, 4};
    const float z[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    npz.append(0, seeds, sizeof seeds);
    npz.append(1, z, sizeof z);
    npz.finish();
  }
  const CliResult r =
      run_cli({"generate", "--network", digits32(), "--device", "cpu", "--ws", path, "--outdir", dir + "/g"});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(r.err, "arrays 'seeds', 'z', none called 'w'")) << r.err;
  EXPECT_TRUE(has_text(r.err, "hint: for the images of its seeds use --seeds")) << r.err;
  EXPECT_FALSE(file_exists(dir + "/g"));
}
