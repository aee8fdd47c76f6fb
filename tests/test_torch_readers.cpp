// torch.save readers (readers/torch_storage.h, zip_reader.h) and strided tensor views
// (arrays.h): zip central directory and ZIP64, CRC checks, legacy streams, storage blobs in
// either format, size / stride / offset, float16 / bfloat16 / float64 storages.
#include <gtest/gtest.h>

#include <cstring>

#include "readers/checkpoint.h"
#include "readers/pickle_access.h"
#include "readers/zip_reader.h"
#include "sg2/error.h"
#include "test_util.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::readers;

namespace {

std::string bytes_of_file(const std::string& rel) {
  auto v = detail::read_file(test::source_path(rel));
  return std::string(v.begin(), v.end());
}

void put16(std::string& s, uint16_t v) {
  s += char(v & 255);
  s += char(v >> 8);
}
void put32(std::string& s, uint32_t v) {
  put16(s, uint16_t(v));
  put16(s, uint16_t(v >> 16));
}
void put64(std::string& s, uint64_t v) {
  put32(s, uint32_t(v));
  put32(s, uint32_t(v >> 32));
}

/// A stored zip with one entry whose central record uses ZIP64 fields throughout, and ZIP64 end
/// records (APPNOTE 4.3.14-4.3.16, 4.5.3).
std::string zip64_archive(const std::string& name, const std::string& data) {
  std::string z;
  put32(z, 0x04034b50);
  put16(z, 45);
  put16(z, 8);  // sizes in a data descriptor, as torch writes
  put16(z, 0);
  put32(z, 0);
  put32(z, 0);
  put32(z, 0);
  put32(z, 0);
  put16(z, uint16_t(name.size()));
  put16(z, 0);
  z += name;
  z += data;
  const uint64_t cd = z.size();
  put32(z, 0x02014b50);
  put16(z, 45);
  put16(z, 45);
  put16(z, 8);
  put16(z, 0);
  put32(z, 0);
  put32(z, crc32(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  put32(z, 0xffffffffu);
  put32(z, 0xffffffffu);
  put16(z, uint16_t(name.size()));
  put16(z, 28);
  put16(z, 0);
  put16(z, 0);
  put16(z, 0);
  put32(z, 0);
  put32(z, 0xffffffffu);
  z += name;
  put16(z, 1);
  put16(z, 24);
  put64(z, data.size());
  put64(z, data.size());
  put64(z, 0);
  const uint64_t cd_size = z.size() - cd, end64 = z.size();
  put32(z, 0x06064b50);
  put64(z, 44);
  put16(z, 45);
  put16(z, 45);
  put32(z, 0);
  put32(z, 0);
  put64(z, 1);
  put64(z, 1);
  put64(z, cd_size);
  put64(z, cd);
  put32(z, 0x07064b50);
  put32(z, 0);
  put64(z, end64);
  put32(z, 1);
  put32(z, 0x06054b50);
  put16(z, 0);
  put16(z, 0);
  put16(z, 0xffff);
  put16(z, 0xffff);
  put32(z, 0xffffffffu);
  put32(z, 0xffffffffu);
  put16(z, 0);
  return z;
}

std::string zip_error(const std::string& bytes) {
  try {
    ZipArchive z(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "bad.zip");
    for (const ZipEntry& e : z.entries()) z.data(e);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ZipReader, CentralDirectoryOfATorchArchive) {
  const std::string f = bytes_of_file("tests/data/checkpoints/rosinality16.pt");
  ZipArchive z(reinterpret_cast<const uint8_t*>(f.data()), f.size(), "rosinality16.pt");
  const ZipEntry* pkl = z.find("rosinality16/data.pkl");
  ASSERT_NE(pkl, nullptr);
  EXPECT_EQ(pkl->method, 0);
  EXPECT_TRUE(pkl->flags & 8) << "torch writes data descriptors";
  EXPECT_EQ(pkl->data_offset % 64, 0u) << "torch aligns record data to 64 bytes";
  EXPECT_EQ(z.data(*pkl).substr(0, 2), "\x80\x02");
  EXPECT_NE(z.find("rosinality16/version"), nullptr);
}

TEST(ZipReader, Zip64RecordsAndFields) {
  const std::string z = zip64_archive("archive/data.pkl", "hello zip64");
  ZipArchive a(reinterpret_cast<const uint8_t*>(z.data()), z.size(), "z64.zip");
  ASSERT_EQ(a.entries().size(), 1u);
  EXPECT_EQ(a.entries()[0].size, 11u);
  EXPECT_EQ(a.data(a.entries()[0]), "hello zip64");
}

TEST(ZipReader, CorruptArchivesAreClearErrors) {
  const std::string good = zip64_archive("x", "payload");
  // CRC mismatch in the data.
  std::string flipped = good;
  flipped[31] ^= 1;
  EXPECT_NE(zip_error(flipped).find("CRC-32"), std::string::npos) << zip_error(flipped);
  // Truncated before the end record, a directory offset past the end, a broken central header.
  EXPECT_NE(zip_error(good.substr(0, good.size() - 5)).find("end-of-central-directory"), std::string::npos);
  const std::string torch_zip = bytes_of_file("tests/data/checkpoints/rosinality16.pt");
  std::string bad_offset = torch_zip;
  const size_t eocd = bad_offset.size() - 22;
  ASSERT_EQ(detail::load_le32(reinterpret_cast<const uint8_t*>(bad_offset.data()) + eocd), 0x06054b50u);
  bad_offset[eocd + 16] = char(0xff);
  bad_offset[eocd + 19] = char(0x7f);
  EXPECT_NE(zip_error(bad_offset).find("central directory"), std::string::npos) << zip_error(bad_offset);
  std::string bad_sig = torch_zip;
  const uint32_t cd = detail::load_le32(reinterpret_cast<const uint8_t*>(bad_sig.data()) + eocd + 16);
  bad_sig[cd] = 'X';
  EXPECT_NE(zip_error(bad_sig).find("bad header at byte " + std::to_string(cd)), std::string::npos)
      << zip_error(bad_sig);
  // Found by fuzz_zip: a 55-byte file whose ZIP64 locator points into a file too small for the
  // ZIP64 end record (an out-of-bounds read before the fix).
  const std::string tiny(
      "PK\x03\x04\0\0\x08\x08\0up\0\0PK\x06\x07\0\0\0\0\x32]\0\0\0\0\0\0\x01\0\0\0PK\x05\x06"
      "\0\0\0\0%\0%\0\n\0\0\0\xff\xff\xff\xff\0\0",
      55);
  EXPECT_NE(zip_error(tiny).find("ZIP64 end record expected"), std::string::npos) << zip_error(tiny);
  // Entry sizes of exabytes (ZIP64 field) are refused before anything is read.
  std::string huge = good;
  const size_t field = huge.find(std::string("\x01\x00\x18\x00", 4)) + 4;
  for (int k = 0; k < 16; ++k) huge[field + k] = (k == 7 || k == 15) ? char(0x40) : 0;
  EXPECT_NE(zip_error(huge).find("runs past the end"), std::string::npos) << zip_error(huge);
}

TEST(TorchReaders, StorageBlobsInEitherFormat) {
  const std::string f = bytes_of_file("tests/data/checkpoints/pickles/zip_storage_blob.pkl");
  auto ck = open_checkpoint(reinterpret_cast<const uint8_t*>(f.data()), f.size(), "zip_storage_blob.pkl");
  Tensor t = ck->tensors->read(pickle::dict_get(ck->root, "t"), "t");
  EXPECT_TRUE(test::tensors_near(t, Tensor({2, 3}, {0, 0.25f, 0.5f, 0.75f, 1, 1.25f}), 0, "zip blob"));
  const pickle::Node* plain = pickle::dict_get(ck->root, "plain");
  EXPECT_EQ(ck->tensors->dtype(plain, "plain"), std::optional<DType>(DType::f64));
  EXPECT_TRUE(test::tensors_near(ck->tensors->read(plain, "plain"), Tensor({4}, {0, 1, 2, 3}), 0, "legacy blob"));
}

TEST(TorchReaders, LegacyAndZipContainers) {
  for (const char* name : {"rosinality16.pt", "rosinality16_legacy.pt"}) {
    const std::string f = bytes_of_file(std::string("tests/data/checkpoints/") + name);
    auto ck = open_checkpoint(reinterpret_cast<const uint8_t*>(f.data()), f.size(), name);
    EXPECT_EQ(ck->pickle_protocol, 2);
    const pickle::Node* g = pickle::dict_get(ck->root, "g_ema");
    ASSERT_TRUE(pickle::is_dict_like(g)) << name;
    auto v = ck->tensors->view(pickle::dict_get(g, "conv1.conv.weight"), "w");
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->shape, (std::vector<int64_t>{1, 8, 8, 3, 3}));
  }
  // A legacy stream cut inside its storage records.
  const std::string f = bytes_of_file("tests/data/checkpoints/rosinality16_legacy.pt");
  try {
    open_checkpoint(reinterpret_cast<const uint8_t*>(f.data()), f.size() - 100, "cut.pt");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated: storage"), std::string::npos) << e.what();
  }
}

TEST(Arrays, StridesOffsetsAndDtypes) {
  // A [2, 3] view at offset 1 with transposed strides into 8 float32 values.
  float raw[8] = {9, 0, 1, 2, 3, 4, 5, 6};
  ArrayView v;
  v.dtype = DType::f32;
  v.shape = {2, 3};
  v.strides = {1, 2};
  v.offset = 1;
  v.data = reinterpret_cast<const uint8_t*>(raw);
  v.storage_elements = 8;
  pickle::Budget b(1 << 20, "t");
  EXPECT_TRUE(test::tensors_near(to_float_tensor(v, b, "t"), Tensor({2, 3}, {0, 2, 4, 1, 3, 5}), 0, "strided"));
  // Channels-last [1, 2, 2, 2] (strides [8, 1, 4, 2]).
  float cl[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  ArrayView c = v;
  c.shape = {1, 2, 2, 2};
  c.strides = {8, 1, 4, 2};
  c.offset = 0;
  c.data = reinterpret_cast<const uint8_t*>(cl);
  EXPECT_TRUE(test::tensors_near(to_float_tensor(c, b, "cl"), Tensor({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), 0,
                                 "channels last"));
  // float16, bfloat16, float64.
  uint16_t h[2] = {0x3c00, 0xc000};  // 1, -2
  ArrayView hv;
  hv.dtype = DType::f16;
  hv.shape = {2};
  hv.strides = {1};
  hv.data = reinterpret_cast<const uint8_t*>(h);
  hv.storage_elements = 2;
  EXPECT_TRUE(test::tensors_near(to_float_tensor(hv, b, "h"), Tensor({2}, {1, -2}), 0, "f16"));
  uint16_t bf[2] = {0x3f80, 0x4040};  // 1, 3
  hv.dtype = DType::bf16;
  hv.data = reinterpret_cast<const uint8_t*>(bf);
  EXPECT_TRUE(test::tensors_near(to_float_tensor(hv, b, "bf"), Tensor({2}, {1, 3}), 0, "bf16"));
  double d[2] = {0.5, -1e30};
  hv.dtype = DType::f64;
  hv.data = reinterpret_cast<const uint8_t*>(d);
  EXPECT_TRUE(test::tensors_near(to_float_tensor(hv, b, "d"), Tensor({2}, {0.5f, -1e30f}), 0, "f64"));
  // Out of bounds, negative strides, impossible sizes.
  auto err = [&](ArrayView x) {
    try {
      to_float_tensor(x, b, "t");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  ArrayView o = v;
  o.offset = 3;
  EXPECT_NE(err(o).find("holds only 8"), std::string::npos) << err(o);
  o = v;
  o.strides = {-1, 2};
  EXPECT_NE(err(o).find("negative stride"), std::string::npos);
  o = v;
  o.shape = {int64_t(1) << 40, int64_t(1) << 40};
  o.strides = {0, 0};
  EXPECT_NE(err(o).find("impossibly large"), std::string::npos) << err(o);
  o.shape = {int64_t(1) << 31};
  o.strides = {0};
  EXPECT_NE(err(o).find("MiB"), std::string::npos) << err(o);  // a broadcast view too big for the budget
}
