// SHA-256 (util/sha256.cpp): the FIPS 180-4 test vectors, and the x86 SHA-extension path against the
// portable one on every length around the block and padding boundaries, split updates included.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/file_util.h"

using namespace sg2;

namespace {
std::string hex_of(const std::string& s) {
  return detail::sha256_hex(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
}  // namespace

TEST(Sha256, FipsVectorsAndAMillionAs) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_of(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ExtensionsAndPortableCodeAgree) {
  std::vector<uint8_t> data(4096 + 200);
  uint32_t x = 12345;
  for (uint8_t& b : data) {
    x = x * 1664525u + 1013904223u;
    b = uint8_t(x >> 24);
  }
  // every length up to 300 (the padding's one- and two-block tails), then whole runs of blocks
  for (size_t n = 0; n <= data.size(); n += n < 300 ? 1 : 61) {
    const std::string fast = detail::sha256_hex(data.data(), n), slow = detail::sha256_hex_portable(data.data(), n);
    ASSERT_EQ(fast, slow) << n << " bytes (SHA extensions: " << detail::sha256_uses_sha_extensions() << ")";
  }
}
