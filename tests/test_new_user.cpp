// What a new user met (issue 15, items 19-21): device messages that say what is missing, library
// messages without CLI hints (the CLI adds its own), the C ABI with zero images, and the CLI's
// edges: seed lists with blanks, duplicates and leading zeros, --class -1, --outdir "", convert to a
// .pkl name, `sg2 help generate`, --batch against memory, and inspect naming a model file's source.
// (The README tour's folders and the embedding examples it showed are checked by test_docs.cpp.)
#include <gtest/gtest.h>

#include <regex>

#include "engine/cuda_messages.h"
#include "sg2/convert.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/sg2_c.h"
#include "test_cli_run.h"
#include "util/file_util.h"

using namespace sg2;
using namespace sg2::test;

namespace {

bool has_text(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// The message of what `f` throws ("" and a test failure when it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

}  // namespace

// --- item 20: devices, library messages, the C ABI ---------------------------------------------

TEST(NewUser, NoDriverIsNotAnOldDriver) {
  // What the CUDA runtime says on a machine with the toolkit and no driver (this development
  // machine, measured): cudaGetDeviceCount -> cudaErrorInsufficientDriver, cudaDriverGetVersion -> 0.
  const std::string none = cuda_unavailable_reason(
      cuda_status::insufficient_driver, "CUDA driver version is insufficient for CUDA runtime version", 0, 13000);
  EXPECT_TRUE(has_text(none, "no NVIDIA driver was found")) << none;
  EXPECT_FALSE(has_text(none, "older")) << none;
  const std::string old = cuda_unavailable_reason(cuda_status::insufficient_driver, "insufficient", 12040, 13000);
  EXPECT_EQ(old, "the NVIDIA driver (CUDA 12.4) is older than this build's CUDA 13.0 runtime; update the driver");
  const std::string nodev =
      cuda_unavailable_reason(cuda_status::no_device, "no CUDA-capable device is detected", 13000, 13000);
  EXPECT_TRUE(has_text(nodev, "no CUDA-capable GPU was found (the NVIDIA driver (CUDA 13.0) is installed")) << nodev;
  EXPECT_TRUE(
      has_text(cuda_unavailable_reason(cuda_status::success, "", 13000, 13000), "no CUDA-capable GPU was found"));
  EXPECT_TRUE(
      has_text(cuda_unavailable_reason(cuda_status::system_driver_mismatch, "mismatch", 13000, 13000), "reboot"));
  EXPECT_TRUE(has_text(cuda_unavailable_reason(999, "unknown error", 13000, 13000),
                       "CUDA could not be initialised: unknown error"));
  EXPECT_EQ(cuda_version_text(12080), "12.8");
}

TEST(NewUser, LibraryMessagesCarryNoCliHintsAndTheCliAddsThem) {
  const std::string dir = temp_dir("hints");
  const std::string model = write_tiny_model(dir, 4);
  GeneratorOptions cpu;
  cpu.device = Device{};
  Generator gen(load_model_file(model), cpu);
  const std::string cls = error_of([&] { gen.map(z_from_seeds({1}, 8), Tensor()); });
  EXPECT_TRUE(has_text(cls, "a class label is required, one of 0..3")) << cls;
  GeneratorOptions fp16 = cpu;
  fp16.precision = Precision::fp16;
  const std::string prec = error_of([&] { Generator g(load_model_file(model), fp16); });
  EXPECT_TRUE(has_text(prec, "precision 'fp16' needs the CUDA backend")) << prec;
  for (const std::string& m : {cls, prec}) {
    EXPECT_FALSE(has_text(m, "--")) << m;
    EXPECT_FALSE(has_text(m, "CLI")) << m;
  }
  CliResult p = run_cli({"generate", "--network", model, "--device", "cpu", "--precision", "tf32", "--class", "1",
                         "--seeds", "1", "--outdir", dir + "/p"});
  EXPECT_EQ(p.status, 2) << describe(p);
  EXPECT_TRUE(has_text(p.err,
                       "--precision tf32 needs the CUDA backend, and this run is on the CPU, which computes in "
                       "float32 only: use --precision fp32 or auto"))
      << p.err;

  GeneratorOptions gpu;
  gpu.device = Device::parse("cuda");
  if (!cuda_available()) {  // no GPU here (or no CUDA in this build): the library says why, the CLI what to do
    const std::string dev = error_of([&] { Generator g(load_model_file(model), gpu); });
    EXPECT_FALSE(has_text(dev, "--")) << dev;
    CliResult d = run_cli(
        {"generate", "--network", model, "--device", "cuda", "--class", "1", "--seeds", "1", "--outdir", dir + "/d"});
    EXPECT_EQ(d.status, 1) << describe(d);
    EXPECT_TRUE(has_text(d.err, "use --device cpu")) << d.err;
    EXPECT_FALSE(has_text(d.err, "older than")) << d.err;
    EXPECT_FALSE(file_exists(dir + "/d"));
    // Device lists (generate shares the seeds over them) are read as lists, not as one device:
    // without a GPU each is the same device error with the hint, never "unknown device".
    for (const char* list : {"cuda:0,0", "cuda:0,1", "cuda:all"}) {
      CliResult l = run_cli(
          {"generate", "--network", model, "--device", list, "--class", "1", "--seeds", "1", "--outdir", dir + "/l"});
      EXPECT_EQ(l.status, 1) << list << ": " << describe(l);
      EXPECT_TRUE(has_text(l.err, "use --device cpu")) << l.err;
      EXPECT_FALSE(has_text(l.err, "unknown device")) << l.err;
      EXPECT_FALSE(file_exists(dir + "/l"));
    }
  }
  CliResult bad = run_cli(
      {"generate", "--network", model, "--device", "cuda:0,x", "--class", "1", "--seeds", "1", "--outdir", dir + "/b"});
  EXPECT_EQ(bad.status, 2) << describe(bad);
  EXPECT_TRUE(has_text(bad.err, "cuda:0,x")) << bad.err;
}

TEST(NewUser, CAbiZeroImagesIsNotAMissingLabel) {
  const std::string dir = temp_dir("c0");
  const std::string model = write_tiny_model(dir, 4);
  sg2_options o;
  sg2_options_init(&o);
  o.device = "cpu";
  sg2_generator* g = nullptr;
  ASSERT_EQ(sg2_generator_open(model.c_str(), &o, &g), SG2_OK) << sg2_last_error();
  const uint32_t seeds[] = {1};
  float img[1] = {0};
  EXPECT_EQ(sg2_generate_seeds(g, seeds, 0, 2, 1.0f, SG2_NOISE_CONST, img), SG2_OK) << sg2_last_error();
  const float z[8] = {0}, c[4] = {0};
  float ws[1] = {0};
  EXPECT_EQ(sg2_map(g, z, c, 0, 1.0f, -1, ws), SG2_OK) << sg2_last_error();
  EXPECT_EQ(sg2_generate_seeds(g, seeds, 1, -1, 1.0f, SG2_NOISE_CONST, img), SG2_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has_text(sg2_last_error(), "pass a class_idx in [0, 3]")) << sg2_last_error();
  EXPECT_FALSE(has_text(sg2_last_error(), "--")) << sg2_last_error();
  sg2_generator_close(g);
}

// --- item 21: CLI edges ------------------------------------------------------------------------

TEST(NewUser, SeedListsWithBlanksDuplicatesAndLeadingZeros) {
  const std::string dir = temp_dir("seeds");
  const std::string model = write_tiny_model(dir);
  CliResult sp =
      run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0, 1", "--outdir", dir + "/sp"});
  ASSERT_EQ(sp.status, 0) << describe(sp);
  EXPECT_TRUE(file_exists(dir + "/sp/seed0000.png") && file_exists(dir + "/sp/seed0001.png"));

  CliResult dup = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-3,2", "--grid", "2x2",
                           "--outdir", dir + "/dup"});
  ASSERT_EQ(dup.status, 0) << describe(dup);
  EXPECT_TRUE(has_text(dup.out, "sg2 generate: 4 images")) << dup.out;  // what is written
  EXPECT_TRUE(has_text(
      dup.err, "sg2 generate: note: --seeds lists 1 seed more than once; each seed is generated once (4 images)"))
      << dup.err;

  CliResult zeros = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "00000000000000000001", "-q",
                             "--outdir", dir + "/z"});
  ASSERT_EQ(zeros.status, 0) << describe(zeros);
  EXPECT_TRUE(file_exists(dir + "/z/seed0001.png"));
  CliResult styles = run_cli({"mix", "--network", model, "--device", "cpu", "--rows", "1", "--cols", "2", "--styles",
                              "0, 2 - 3", "-q", "--outdir", dir + "/m"});
  EXPECT_EQ(styles.status, 0) << describe(styles);
}

TEST(NewUser, ClassOutdirConvertNameAndHelp) {
  const std::string dir = temp_dir("edges");
  const std::string cond = write_tiny_model(dir, 4);
  CliResult neg = run_cli({"generate", "--network", cond, "--seeds", "1", "--class", "-1", "--outdir", dir + "/n"});
  EXPECT_EQ(neg.status, 2) << describe(neg);
  EXPECT_TRUE(has_text(neg.err, "--class -1 is out of range: this model has classes 0..3")) << neg.err;

  CliResult empty = run_cli({"generate", "--network", cond, "--seeds", "1", "--class", "1", "--outdir", ""});
  EXPECT_EQ(empty.status, 2) << describe(empty);
  EXPECT_TRUE(has_text(empty.err, "--outdir is empty; name a folder (--outdir . for the current one)")) << empty.err;
  EXPECT_FALSE(file_exists("seed0001.png"));

  for (const char* name : {"/out.pkl", "/out.pt"}) {
    CliResult pkl = run_cli({"convert", source_path("tests/data/checkpoints/rosinality16.pt"), dir + name});
    EXPECT_EQ(pkl.status, 2) << describe(pkl);
    EXPECT_TRUE(has_text(pkl.err, "has a checkpoint's extension, but sg2 convert writes a safetensors model file"))
        << pkl.err;
    EXPECT_FALSE(file_exists(dir + name));
  }

  CliResult help = run_cli({"help", "generate"});
  CliResult own = run_cli({"generate", "--help"});
  EXPECT_EQ(help.status, 0) << describe(help);
  EXPECT_EQ(help.out, own.out);
  EXPECT_TRUE(has_text(help.out, "--seeds")) << help.out;
  CliResult unknown = run_cli({"help", "frobnicate"});
  EXPECT_EQ(unknown.status, 2) << describe(unknown);
  EXPECT_TRUE(has_text(unknown.err, "unknown command 'frobnicate'")) << unknown.err;
}

TEST(NewUser, BatchIsCheckedAgainstMemoryFirst) {
  const std::string dir = temp_dir("batch");
  const std::string model = write_tiny_model(dir);
  // 2^20 images of even a 16x16 model need more memory than any test machine has (checked before
  // any work: the run would take hours).
  CliResult r = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-1048575", "--batch",
                         "1048576", "--outdir", dir + "/o"});
  EXPECT_EQ(r.status, 2) << describe(r);
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex("--batch 1048576 needs about [0-9.]+ GiB of memory for this 16x16 model on "
                                          "the CPU \\(about [0-9.]+ KiB per image\\), but [0-9.]+ (GiB|MiB) are "
                                          "available: use --batch [0-9]+ or less")))
      << r.err;
  // A --batch above the run's image count is quoted as given, with what the run holds.
  CliResult over = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "0-999999", "--batch",
                            "1048576", "--outdir", dir + "/over"});
  EXPECT_EQ(over.status, 2) << describe(over);
  EXPECT_TRUE(has_text(over.err, "--batch 1048576 (here all 1000000 images of the run at once) needs about "))
      << over.err;
  EXPECT_FALSE(file_exists(dir + "/over"));
  // A batch larger than the run holds what the run makes.
  CliResult one = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "1", "--batch", "1048576",
                           "-q", "--outdir", dir + "/one"});
  EXPECT_EQ(one.status, 0) << describe(one);
  EXPECT_FALSE(file_exists(dir + "/o"));
  CliResult ok = run_cli({"generate", "--network", model, "--device", "cpu", "--seeds", "1-3", "--batch", "2", "-q",
                          "--outdir", dir + "/ok"});
  EXPECT_EQ(ok.status, 0) << describe(ok);
}

TEST(NewUser, InspectNamesWhereAModelFileCameFrom) {
  const std::string dir = temp_dir("from");
  const std::string src = source_path("tests/data/checkpoints/rosinality16.pt");
  CliResult c = run_cli({"convert", src, dir + "/m.safetensors", "-q"});
  ASSERT_EQ(c.status, 0) << describe(c);
  CliResult r = run_cli({"inspect", dir + "/m.safetensors"});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "converted from    rosinality16.pt (rosinality), sha256 " + detail::sha256_file(src) +
                                  ", by sg2 " + version()))
      << r.out;
}

// Issue 23 item 19: the stylegan3 repository's family is a StyleGAN2 network, and inspect says so
// (the README calls the bundled model a StyleGAN2); the JSON keeps the plain family name.
TEST(NewUser, InspectCallsTheStylegan3FamilyAStyleGAN2Network) {
  CliResult r = run_cli({"inspect", digits32()});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has_text(r.out, "\n  family            stylegan3 repo (StyleGAN2 network, G_ema)\n")) << r.out;
  CliResult j = run_cli({"inspect", digits32(), "--json"});
  ASSERT_EQ(j.status, 0) << describe(j);
  EXPECT_TRUE(has_text(j.out, "\"family\": \"stylegan3\"")) << j.out;
  const std::string dir = temp_dir("sg3family");
  CliResult c = run_cli({"convert", digits32(), dir + "/d.safetensors", "-q"});
  ASSERT_EQ(c.status, 0) << describe(c);
  CliResult m = run_cli({"inspect", dir + "/d.safetensors"});
  ASSERT_EQ(m.status, 0) << describe(m);
  EXPECT_TRUE(has_text(m.out, "\n  family            stylegan3 repo (StyleGAN2 network)\n")) << m.out;
  CliResult ros = run_cli({"inspect", source_path("tests/data/checkpoints/rosinality16.pt")});
  ASSERT_EQ(ros.status, 0) << describe(ros);
  EXPECT_TRUE(has_text(ros.out, "\n  family            rosinality (g_ema)\n")) << ros.out;
}
