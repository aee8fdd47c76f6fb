// RandomState against numpy (values printed by numpy 1.24 np.random.RandomState), and the
// fixtures' z files, bit for bit.
#include <gtest/gtest.h>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/npy.h"
#include "sg2/random_state.h"
#include "test_util.h"

using namespace sg2;

namespace {
struct Known {
  uint32_t seed;
  double first[5];      // randn(1, 5)
  double next[3];       // then randn(3): starts with the cached second Gaussian
  double at511, at999;  // randn(1000)[511], [999] from a fresh state
};
const Known kKnown[] = {
    {0u,
     {1.764052345967664, 0.4001572083672233, 0.9787379841057392, 2.240893199201458, 1.8675579901499675},
     {-0.977277879876411, 0.9500884175255894, -0.1513572082976979},
     1.3749640663929898,
     -0.35811407547985674},
    {1u,
     {1.6243453636632417, -0.6117564136500754, -0.5281717522634557, -1.0729686221561705, 0.8654076293246785},
     {-2.3015386968802827, 1.74481176421648, -0.7612069008951028},
     0.19686977925029145,
     -0.18695501653274957},
    {42u,
     {0.4967141530112327, -0.13826430117118466, 0.6476885381006925, 1.5230298564080254, -0.23415337472333597},
     {-0.23413695694918055, 1.5792128155073915, 0.7674347291529088},
     -0.05023810944913695,
     0.5725827813561586},
    {6600u,
     {0.10844632788957152, 0.8586972776377608, -0.30369871994915504, -1.112063750621442, 2.3088928782588285},
     {-1.048867413825928, 0.9476205704370428, 0.8832036409717595},
     -1.9674941912952006,
     0.47992471391171904},
    {4294967295u,
     {0.6484086742306527, 0.6693235306338161, -1.0805437227474493, 0.2845010447986309, 0.11388773652167104},
     {0.8676218937929382, -0.044026015448043285, 0.24877161740907913},
     -0.16334506047141822,
     0.8396779525796308},
};
}  // namespace

TEST(RandomState, Mt19937FirstOutputsSeed0) {
  RandomState r(0);
  EXPECT_EQ(r.next_u32(), 2357136044u);
  EXPECT_EQ(r.next_u32(), 2546248239u);
  EXPECT_EQ(r.next_u32(), 3071714933u);
}

TEST(RandomState, RandomSampleMatchesNumpy) {
  RandomState r(0);
  EXPECT_EQ(r.random_sample(), 0.5488135039273248);
  EXPECT_EQ(r.random_sample(), 0.7151893663724195);
  EXPECT_EQ(r.random_sample(), 0.6027633760716439);
}

TEST(RandomState, RandnMatchesNumpyIncludingCache) {
  for (const Known& k : kKnown) {
    RandomState r(k.seed);
    auto a = r.randn(5);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(a[i], k.first[i]) << "seed " << k.seed << " i " << i;
    auto b = r.randn(3);  // the cached second value of the 3rd pair comes first
    for (int i = 0; i < 3; ++i) EXPECT_EQ(b[i], k.next[i]) << "seed " << k.seed << " continuation " << i;
    RandomState f(k.seed);
    auto c = f.randn(1000);
    EXPECT_EQ(c[511], k.at511) << "seed " << k.seed;
    EXPECT_EQ(c[999], k.at999) << "seed " << k.seed;
  }
}

TEST(RandomState, SeedingClearsTheCache) {
  RandomState a(7);
  a.randn(1);  // leaves a cached value
  RandomState b(7);
  auto x = RandomState(7).randn(2);
  EXPECT_EQ(b.randn(2), x);
}

TEST(RandomState, MatchesFixtureLatentsBitExactly) {
  struct Case {
    const char* file;
    uint32_t seed;
  };
  const Case cases[] = {
      {"tests/data/fixtures/tiny32/z_s0.npy", 0}, {"tests/data/fixtures/tiny32/z_s85.npy", 85},
      {"tests/data/fixtures/cond64/z_s7.npy", 7}, {"models/digits32/goldens/z_s9.npy", 9},
      {"models/digits32/goldens/z_s3.npy", 3},
  };
  for (const Case& c : cases) {
    std::vector<int64_t> shape;
    auto ref = read_npy_f64(test::source_path(c.file), &shape);
    RandomState r(c.seed);
    auto got = r.randn(ref.size());
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << c.file << " index " << i;
    Tensor z = z_from_seed(c.seed, static_cast<int>(shape.back()));
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(z[static_cast<int64_t>(i)], static_cast<float>(ref[i]));
  }
}

TEST(Seeds, ParsesRangesAndLists) {
  EXPECT_EQ(parse_seeds("0-3,42"), (std::vector<uint32_t>{0, 1, 2, 3, 42}));
  EXPECT_EQ(parse_seeds("4294967295"), (std::vector<uint32_t>{4294967295u}));
  EXPECT_EQ(parse_seeds("4294967294-4294967295"), (std::vector<uint32_t>{4294967294u, 4294967295u}));
}

TEST(Seeds, AcceptsBlanksAndLeadingZeros) {  // issue 15 item 21: "0, 1" and 00000000000000000001
  EXPECT_EQ(parse_seeds("0, 1"), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(parse_seeds(" 2 - 4 ,\t7 "), (std::vector<uint32_t>{2, 3, 4, 7}));
  EXPECT_EQ(parse_seeds("00000000000000000001"), (std::vector<uint32_t>{1}));
  EXPECT_EQ(parse_seeds("0000000000004294967295"), (std::vector<uint32_t>{4294967295u}));
  EXPECT_EQ(parse_seeds("000"), (std::vector<uint32_t>{0}));
  EXPECT_EQ(parse_seeds("0-3,2"), (std::vector<uint32_t>{0, 1, 2, 3, 2}));  // the library keeps duplicates
  EXPECT_THROW(parse_seeds("00000000004294967296"), Error);
  EXPECT_THROW(parse_seeds(" "), Error);
  EXPECT_THROW(parse_seeds("1 2"), Error);
}

TEST(Seeds, RejectsOutOfRangeAndGarbage) {
  for (const char* bad : {"4294967296", "-1", "a", "1-", "5-2", "", "1,,2", "99999999999999999999", "1.5"}) {
    try {
      parse_seeds(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << bad;
      EXPECT_NE(std::string(e.what()).find("seed"), std::string::npos) << e.what();
    }
  }
}

TEST(Seeds, TfSeedInputsDrawNoiseAfterZ) {
  // tf_sg2_32 fixture: noise{k} drawn from the seed's RandomState after z (spec §8.2).
  ModelConfig cfg;
  cfg.z_dim = 64;
  cfg.img_resolution = 32;
  cfg.num_ws = 8;
  auto in = tf_seed_inputs(6, cfg);
  ASSERT_EQ(in.noise_maps.size(), 7u);
  for (int k = 0; k < 7; ++k) {
    std::vector<int64_t> shape;
    auto ref = read_npy_f64(
        test::source_path("tests/data/fixtures/tf_sg2_32/tfrun_s6_noise" + std::to_string(k) + ".npy"), &shape);
    ASSERT_EQ(static_cast<int64_t>(ref.size()), in.noise_maps[k].numel()) << k;
    for (size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(in.noise_maps[k][static_cast<int64_t>(i)], static_cast<float>(ref[i]));
  }
}
