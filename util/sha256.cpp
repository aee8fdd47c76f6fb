// sg2 utilities: SHA-256 (FIPS 180-4), portable and with the x86 SHA extensions where the CPU has
// them (the same digest; util/file_util.h).
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "util/file_util.h"

namespace sg2::detail {

namespace {

constexpr std::array<uint32_t, 64> kSha256K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SG2_SHA_NI 1
// The x86 SHA extensions (Intel since Goldmont / Ice Lake, AMD since Zen): four rounds per two
// sha256rnds2 instructions and the message schedule in sha256msg1/msg2, ~8x the portable code (the
// 127 MiB official 1024 pickle is hashed on every load for its provenance: ~0.6 s portable). The
// state lives as (a, b, e, f) and (c, d, g, h) in two registers, as the instructions want it.
__attribute__((target("sha,sse4.1"))) void sha256_blocks_ni(uint32_t* h, const uint8_t* p, size_t blocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));      // h[0..3] = a b c d
  __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));  // h[4..7] = e f g h
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  for (; blocks > 0; --blocks, p += 64) {
    const __m128i abef0 = abef, cdgh0 = cdgh;
    __m128i w[4];
    for (int i = 0; i < 4; ++i)
      w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), bswap);
    for (int g = 0; g < 16; ++g) {  // rounds 4g .. 4g + 3 with schedule words w[g % 4]
      __m128i& cur = w[g & 3];
      if (g >= 4) {  // W[4g..4g+3] from the previous four groups
        const __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(cur, w[(g + 1) & 3]),
                                        _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
        cur = _mm_sha256msg2_epu32(t, w[(g + 3) & 3]);
      }
      __m128i m = _mm_add_epi32(cur, _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kSha256K[size_t(4 * g)])));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
      m = _mm_shuffle_epi32(m, 0x0E);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, m);
    }
    abef = _mm_add_epi32(abef, abef0);
    cdgh = _mm_add_epi32(cdgh, cdgh0);
  }
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  hgfe = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), hgfe);
}

// CPUID: leaf 7's EBX bit 29 (SHA), leaf 1's ECX bit 19 (SSE4.1; clang 14's __builtin_cpu_supports
// knows no "sha")
bool have_sha_ni() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19))) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 29)) != 0;
  }();
  return yes;
}
#else
bool have_sha_ni() { return false; }
#endif

struct Sha256 {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t buf[64];
  size_t buf_len = 0;
  uint64_t total = 0;
  bool portable = false;  // the portable rounds even where the SHA extensions exist (tests)

  void block(const uint8_t* p) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) | (uint32_t(p[4 * i + 2]) << 8) |
             uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      uint32_t ch = (e & f) ^ (~e & g);
      uint32_t t1 = hh + s1 + ch + kSha256K[i] + w[i];
      uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      uint32_t t2 = s0 + maj;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }

  void run_blocks(const uint8_t* p, size_t blocks) {
#ifdef SG2_SHA_NI
    if (!portable && have_sha_ni()) {
      sha256_blocks_ni(h.data(), p, blocks);
      return;
    }
#endif
    for (size_t b = 0; b < blocks; ++b) block(p + 64 * b);
  }

  void update(const uint8_t* p, size_t n) {
    total += n;
    if (buf_len > 0) {
      size_t take = std::min(n, 64 - buf_len);
      std::memcpy(buf + buf_len, p, take);
      buf_len += take;
      p += take;
      n -= take;
      if (buf_len == 64) {
        run_blocks(buf, 1);
        buf_len = 0;
      }
    }
    if (n >= 64) {
      const size_t blocks = n / 64;
      run_blocks(p, blocks);
      p += blocks * 64;
      n -= blocks * 64;
    }
    if (n > 0) {
      std::memcpy(buf, p, n);
      buf_len = n;
    }
  }

  std::string hex() {
    // the padding in place: 0x80, zeros to 56 bytes mod 64 (a block more if the tail is over 55
    // bytes), the message length in bits, big-endian
    const uint64_t bits = total * 8;
    buf[buf_len++] = 0x80;
    if (buf_len > 56) {
      std::memset(buf + buf_len, 0, 64 - buf_len);
      run_blocks(buf, 1);
      buf_len = 0;
    }
    std::memset(buf + buf_len, 0, 56 - buf_len);
    for (int i = 0; i < 8; ++i) buf[56 + i] = uint8_t(bits >> (56 - 8 * i));
    run_blocks(buf, 1);
    buf_len = 0;
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (uint32_t v : h)
      for (int i = 28; i >= 0; i -= 4) out.push_back(digits[(v >> i) & 15]);
    return out;
  }
};

}  // namespace

std::string sha256_hex(const uint8_t* data, size_t size) {
  Sha256 s;
  s.update(data, size);
  return s.hex();
}

std::string sha256_hex_portable(const uint8_t* data, size_t size) {
  Sha256 s;
  s.portable = true;
  s.update(data, size);
  return s.hex();
}

bool sha256_uses_sha_extensions() { return have_sha_ni(); }

std::string sha256_file(const std::string& path) {
  MappedFile m(path);
  return sha256_hex(m.data(), m.size());
}

}  // namespace sg2::detail
