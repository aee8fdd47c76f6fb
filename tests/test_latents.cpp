// Latents saved with torch (issue 23, item 3; sg2/latents.h): e4e / pSp / StyleCLIP latents.pt,
// rosinality projector.py results, dicts of tensors, read by the safe pickle reader; everything else
// refused saying what --ws accepts. The files are written by tests/data/latents/make_latents.py with
// torch, and <name>.expect.npy holds what torch itself reads from each (as float32).
#include <gtest/gtest.h>

#include <cstring>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/latents.h"
#include "sg2/npy.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

std::string lat(const std::string& name) { return source_path("tests/data/latents/" + name); }
std::string expect_of(const std::string& name) { return lat(name.substr(0, name.rfind('.')) + ".expect.npy"); }

bool has_text(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && (a.numel() == 0 || std::memcmp(a.data(), b.data(), size_t(a.numel()) * 4) == 0);
}

/// The message of the Error reading `path` throws (a test failure when it reads).
std::string refusal(const std::string& path, ErrorKind kind = ErrorKind::bad_file) {
  try {
    read_latents(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << path << " was read";
  return {};
}

}  // namespace

TEST(Latents, TorchFilesAreReadAsTorchReadsThem) {
  struct Case {
    const char* file;
    const char* format;
    const char* note;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"e4e_latents.pt", "torch.save zip", "the tensor of the torch.save file", {2, 6, 8}},
      {"e4e_latents_legacy.pt", "torch.save legacy", "the tensor of the torch.save file", {2, 6, 8}},
      {"e4e_latents_f16.pt", "torch.save zip", "the tensor of the torch.save file", {2, 6, 8}},
      {"projector_w.pt",
       "torch.save zip",
       "'latent' of 2 images of a rosinality projector result ('inputs/face0.png', 'inputs/face1.png')",
       {2, 8}},
      {"projector_wplus.pt",
       "torch.save zip",
       "'latent' of 1 image of a rosinality projector result ('face.png')",
       {1, 6, 8}},
      {"projector_single.pt", "torch.save zip", "'latent' of one image's rosinality projector result", {1, 6, 8}},
      {"dict_latents.pt", "torch.save zip", "tensor 'latents' of the dict", {3, 8}},
      {"dict_one_tensor.pt", "torch.save zip", "tensor 'codes' of the dict", {2, 6, 8}},
      {"numpy_latents.pkl", "pickle", "the tensor of the pickle", {2, 8}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Latents l = read_latents(lat(c.file));
    EXPECT_EQ(l.format, c.format);
    EXPECT_EQ(l.note, c.note);
    EXPECT_EQ(l.values.shape(), c.shape);
    EXPECT_TRUE(same_bits(l.values, read_npy_tensor(expect_of(c.file))));
  }
  // .npy and .npz through the same function.
  Latents npy = read_latents(source_path("tests/data/checkpoints/users/projected_w_as.npy"));
  EXPECT_EQ(npy.format, "npy");
  EXPECT_TRUE(npy.note.empty());
  Latents npz = read_latents(source_path("tests/data/checkpoints/users/projected_w.npz"));
  EXPECT_EQ(npz.format, "npz");
  EXPECT_EQ(npz.note, "array 'w' of the .npz");
  EXPECT_TRUE(same_bits(npy.values, npz.values));
}

TEST(Latents, OtherContentsAreRefusedSayingWhatIsAccepted) {
  const std::string accepted =
      "; latents files are .npy, .npz (numpy.savez) or torch.save files holding one float tensor (e4e / pSp "
      "latents.pt), a dict with a tensor called 'w', 'ws', 'latent' or 'latents' (or with only one tensor), or "
      "rosinality projector.py's result";
  struct Case {
    std::string path, expect;
  };
  const std::vector<Case> cases = {
      {lat("dict_two_tensors.pt"),
       ": not latents: a dict with keys 'a', 'b' (2 tensors, none called 'w', 'ws', 'latent' or 'latents')" + accepted},
      {lat("strings.pt"), ": not latents: a dict with keys 'x', 'y' (no tensor)" + accepted},
      {lat("list_of_tensors.pt"),
       ": not latents: a list of 2 values (save one tensor instead: torch.save(torch.stack(latents), "
       "'latents.pt'))" +
           accepted},
      {lat("os_system.pkl"),
       ": not latents: its top-level value is a call to posix.system, refused (sg2 never runs code from a pickle; "
       "Python would have run it on load)" +
           accepted},
      {source_path("tests/data/checkpoints/users/g_ema_module.pt"),
       ": not latents: a pickled torch module (class model.Generator), not latents" + accepted},
      {source_path("tests/data/checkpoints/rosinality16.pt"),
       ": not latents: a dict with keys 'g_ema', 'latent_avg' (and dicts in it: a checkpoint? --network reads those)"},
      {source_path("tests/data/checkpoints/tf_orig16_gray.pkl"), ": not latents: a tuple of 3 values"},
  };
  for (const Case& c : cases) EXPECT_TRUE(has_text(refusal(c.path), c.path + c.expect)) << refusal(c.path);
  EXPECT_TRUE(has_text(refusal(lat("int_tensor.pt")),
                       "int_tensor.pt: the tensor holds int64 values, not floats (latents are float32, float16, "
                       "bfloat16 or float64)"))
      << refusal(lat("int_tensor.pt"));
}

TEST(Latents, BrokenBytesAreErrorsNamingTheFile) {
  const std::string dir = temp_dir("broken");
  for (const char* name : {"e4e_latents.pt", "e4e_latents_legacy.pt", "projector_w.pt", "numpy_latents.pkl"}) {
    const std::string bytes = slurp(lat(name));
    for (size_t cut : {size_t(0), size_t(1), size_t(7), bytes.size() / 2, bytes.size() - 1}) {
      try {
        Latents l = parse_latents(reinterpret_cast<const uint8_t*>(bytes.data()), cut, "cut.pt");
        ADD_FAILURE() << name << " cut at " << cut << " was read as " << l.values.shape_str();
      } catch (const Error& e) {
        EXPECT_TRUE(has_text(e.what(), "cut.pt")) << e.what();
      }
    }
  }
  // Not a pickle at all (a failed download): said so, with the file's first bytes.
  const std::string html = "<!DOCTYPE html><html>";
  try {
    parse_latents(reinterpret_cast<const uint8_t*>(html.data()), html.size(), "page.pt");
    ADD_FAILURE() << "an HTML page was read";
  } catch (const Error& e) {
    EXPECT_TRUE(has_text(e.what(), "page.pt: not latents: an unknown format (it starts with '<!DOCTYPE html><'"))
        << e.what();
  }
}

TEST(Latents, GenerateWsReadsTorchLatents) {
  const std::string dir = temp_dir("ws");
  const std::string model = write_tiny_model(dir);  // num_ws 6, w_dim 8
  auto gen = [&](const std::string& ws, const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"generate", "--network", model, "--device", "cpu",          "--ws",
                                  ws,         "--format",  "npy", "--outdir", dir + "/" + out};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_cli(a);
  };
  CliResult e4e = gen(lat("e4e_latents.pt"), "e4e");
  ASSERT_EQ(e4e.status, 0) << describe(e4e);
  EXPECT_TRUE(has_text(
      e4e.err, "sg2 generate: note: --ws " + lat("e4e_latents.pt") + ": the tensor of the torch.save file, [2, 6, 8]"))
      << e4e.err;
  EXPECT_TRUE(has_text(e4e.out, "2 images")) << e4e.out;
  CliResult same = gen(expect_of("e4e_latents.pt"), "e4e_npy");
  ASSERT_EQ(same.status, 0) << describe(same);
  for (const char* f : {"/ws0000.npy", "/ws0001.npy"})
    EXPECT_EQ(slurp(dir + "/e4e" + f), slurp(dir + "/e4e_npy" + f)) << f;

  // The projector's W latents: [2, 8], two images (each W broadcast to every ws row).
  CliResult w = gen(lat("projector_w.pt"), "w");
  ASSERT_EQ(w.status, 0) << describe(w);
  EXPECT_TRUE(has_text(w.err,
                       "'latent' of 2 images of a rosinality projector result ('inputs/face0.png', "
                       "'inputs/face1.png'), [2, 8]"))
      << w.err;
  CliResult w_npy = gen(expect_of("projector_w.pt"), "w_npy");
  ASSERT_EQ(w_npy.status, 0) << describe(w_npy);
  EXPECT_EQ(slurp(dir + "/w/ws0001.npy"), slurp(dir + "/w_npy/ws0001.npy"));
  // --w_plus of one image: [1, 6, 8], never ambiguous (the images give the batch axis).
  CliResult wp = gen(lat("projector_wplus.pt"), "wp");
  ASSERT_EQ(wp.status, 0) << describe(wp);
  EXPECT_TRUE(has_text(wp.out, "1 image ")) << wp.out;

  CliResult bad = gen(lat("strings.pt"), "bad");
  EXPECT_EQ(bad.status, 1) << describe(bad);
  EXPECT_TRUE(has_text(bad.err, "sg2 generate: error: --ws " + lat("strings.pt") +
                                    ": not latents: a dict with keys 'x', 'y' (no tensor); latents files are .npy"))
      << bad.err;
  EXPECT_FALSE(file_exists(dir + "/bad"));
}
