// sg2: the C ABI (sg2_c.h) over the C++ API. Every entry point catches everything.
#include "sg2/sg2_c.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "sg2/default_model.h"
#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/image.h"
#include "sg2/model.h"

struct sg2_generator {
  sg2::Generator gen;
  std::atomic<bool> busy{false};  // a call is running on some thread
};

namespace {

thread_local std::string g_last_error, g_last_hint;

sg2_status status_of(sg2::ErrorKind k) {
  switch (k) {
    case sg2::ErrorKind::invalid_argument:
      return SG2_ERR_INVALID_ARGUMENT;
    case sg2::ErrorKind::bad_file:
      return SG2_ERR_BAD_FILE;
    case sg2::ErrorKind::unsupported:
      return SG2_ERR_UNSUPPORTED;
    case sg2::ErrorKind::io:
      return SG2_ERR_IO;
    case sg2::ErrorKind::device:
      return SG2_ERR_DEVICE;
    case sg2::ErrorKind::out_of_memory:
      return SG2_ERR_OUT_OF_MEMORY;
    case sg2::ErrorKind::internal:
      return SG2_ERR_INTERNAL;
  }
  return SG2_ERR_INTERNAL;
}

template <typename F>
sg2_status guarded(F&& f) {
  try {
    f();
    return SG2_OK;
  } catch (const sg2::Error& e) {
    g_last_error = e.message();
    g_last_hint = e.hint();
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    g_last_error = "out of host memory";
    g_last_hint.clear();
    return SG2_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    g_last_hint.clear();
    return SG2_ERR_INTERNAL;
  } catch (...) {
    g_last_error = "unknown error";
    g_last_hint.clear();
    return SG2_ERR_INTERNAL;
  }
}

void need(const void* p, const char* what) {
  if (p == nullptr) sg2::fail(sg2::ErrorKind::invalid_argument, what, " must not be NULL");
}

// The largest n (rows of a call) the C ABI takes: every size below is computed from it in int64
// without overflow (n x num_ws x w_dim x 4 bytes stays far below 2^63).
constexpr int64_t kMaxRows = int64_t(1) << 31;

void need_n(int64_t n) {
  if (n < 0 || n > kMaxRows) sg2::fail(sg2::ErrorKind::invalid_argument, "n must be in [0, 2^31], got ", n);
}

// rows x per elements, checked (per >= 0, rows <= kMaxRows): the count of floats the caller's
// array must hold; Error(invalid_argument) when it could not be allocated on any machine.
int64_t elements(int64_t rows, int64_t per, const char* what) {
  if (per > 0 && rows > (int64_t(1) << 40) / per)
    sg2::fail(sg2::ErrorKind::invalid_argument, what, ": ", rows, " x ", per, " values is more than any call takes");
  return rows * per;
}

sg2::NoiseMode noise_of(sg2_noise_mode m) {
  switch (m) {
    case SG2_NOISE_CONST:
      return sg2::NoiseMode::const_;
    case SG2_NOISE_RANDOM:
      return sg2::NoiseMode::random;
    case SG2_NOISE_NONE:
      return sg2::NoiseMode::none;
    default:
      break;
  }
  sg2::fail(sg2::ErrorKind::invalid_argument, "unknown noise mode ", static_cast<int>(m));
}

// One call at a time on a handle: a second thread fails at once with a message, instead of racing
// the first (the generator is not thread-safe) and waiting forever.
class Busy {
 public:
  explicit Busy(sg2_generator& g) : flag_(g.busy) {
    if (flag_.exchange(true))
      sg2::fail(sg2::ErrorKind::invalid_argument,
                "this sg2_generator is running a call on another thread: a generator is not thread-safe (open one "
                "per thread, or take a lock around the calls)");
  }
  ~Busy() { flag_.store(false); }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::atomic<bool>& flag_;
};

void copy_out(const sg2::Tensor& t, float* out) {
  if (t.numel() > 0) std::memcpy(out, t.data(), sizeof(float) * static_cast<size_t>(t.numel()));
}

}  // namespace

extern "C" {

const char* sg2_last_error(void) { return g_last_error.c_str(); }

const char* sg2_last_error_hint(void) { return g_last_hint.c_str(); }

const char* sg2_version(void) { return sg2::version(); }

void sg2_options_init(sg2_options* options) {
  if (options == nullptr) return;
  options->device = nullptr;
  options->precision = nullptr;
  options->max_batch = 0;
}

sg2_status sg2_generator_open(const char* path, const sg2_options* options, sg2_generator** out) {
  if (out != nullptr) *out = nullptr;
  return guarded([&] {
    need(out, "out");
    sg2::GeneratorOptions o;
    if (options != nullptr) {
      if (options->device != nullptr) o.device = sg2::Device::parse(options->device);
      if (options->precision != nullptr) o.precision = sg2::parse_precision(options->precision);
      o.max_batch = options->max_batch;
    }
    sg2::Model model = path != nullptr ? sg2::load_model(path) : sg2::load_default_model();
    *out = new sg2_generator{sg2::Generator(std::move(model), o)};
  });
}

void sg2_generator_close(sg2_generator* generator) { delete generator; }

sg2_status sg2_generator_info(const sg2_generator* generator, sg2_model_info* out) {
  return guarded([&] {
    need(generator, "generator");
    need(out, "out");
    const sg2::ModelConfig& c = generator->gen.config();
    *out = sg2_model_info{c.z_dim, c.c_dim, c.w_dim, c.num_ws, c.img_resolution, c.img_channels};
  });
}

sg2_status sg2_generator_image_size(const sg2_generator* generator, int* height, int* width) {
  return guarded([&] {
    need(generator, "generator");
    need(height, "height");
    need(width, "width");
    const sg2::ModelConfig& c = generator->gen.config();
    *height = c.height();
    *width = c.width();
  });
}

sg2_status sg2_map(sg2_generator* generator, const float* z, const float* c, int64_t n, float psi, int cutoff,
                   float* ws_out) {
  return guarded([&] {
    need(generator, "generator");
    need_n(n);
    need(z, "z");
    need(ws_out, "ws_out");
    const sg2::ModelConfig& cfg = generator->gen.config();
    // Everything checked before the caller's arrays are read.
    if (!std::isfinite(psi)) sg2::fail(sg2::ErrorKind::invalid_argument, "truncation psi must be finite, got ", psi);
    if (cfg.c_dim > 0 && c == nullptr)
      sg2::fail(sg2::ErrorKind::invalid_argument, "this model is conditional (c_dim ", cfg.c_dim,
                "): c must be a one-hot label per row, not NULL");
    const int64_t zn = elements(n, cfg.z_dim, "z"), cn = elements(n, cfg.c_dim, "c");
    elements(n, int64_t(cfg.num_ws) * cfg.w_dim, "ws_out");
    const Busy busy(*generator);
    sg2::Tensor zt({n, cfg.z_dim}, std::vector<float>(z, z + zn));
    sg2::Tensor ct;
    if (cfg.c_dim > 0) ct = sg2::Tensor({n, cfg.c_dim}, std::vector<float>(c, c + cn));
    sg2::Truncation tr;
    tr.psi = psi;
    if (cutoff >= 0) tr.cutoff = cutoff;
    copy_out(generator->gen.map(zt, ct, tr), ws_out);
  });
}

sg2_status sg2_synthesize(sg2_generator* generator, const float* ws, int64_t n, sg2_noise_mode noise_mode,
                          uint64_t noise_seed, const uint64_t* keys, float* img_out) {
  return guarded([&] {
    need(generator, "generator");
    need_n(n);
    need(ws, "ws");
    need(img_out, "img_out");
    const sg2::ModelConfig& cfg = generator->gen.config();
    sg2::NoiseSpec noise;
    noise.mode = noise_of(noise_mode);  // checked before the caller's arrays are read
    noise.seed = noise_seed;
    const int64_t wn = elements(n, int64_t(cfg.num_ws) * cfg.w_dim, "ws");
    elements(n, int64_t(cfg.img_channels) * cfg.height() * cfg.width(), "img_out");
    const Busy busy(*generator);
    sg2::Tensor wt({n, cfg.num_ws, cfg.w_dim}, std::vector<float>(ws, ws + wn));
    if (keys != nullptr && noise.mode == sg2::NoiseMode::random) noise.keys.assign(keys, keys + n);
    copy_out(generator->gen.synthesize(wt, noise), img_out);
  });
}

sg2_status sg2_generate_seeds(sg2_generator* generator, const uint32_t* seeds, int64_t n, int class_idx, float psi,
                              sg2_noise_mode noise_mode, float* img_out) {
  return guarded([&] {
    need(generator, "generator");
    need_n(n);
    need(seeds, "seeds");
    need(img_out, "img_out");
    const sg2::ModelConfig& cfg = generator->gen.config();
    // Everything checked before the caller's arrays are read.
    if (cfg.c_dim > 0 && (class_idx < 0 || class_idx >= cfg.c_dim))
      sg2::fail(sg2::ErrorKind::invalid_argument, "this model is conditional (", cfg.c_dim,
                " classes): pass a class_idx in [0, ", cfg.c_dim - 1, "], got ", class_idx);
    if (cfg.c_dim == 0 && class_idx >= 0)
      sg2::fail(sg2::ErrorKind::invalid_argument, "this model is unconditional: pass class_idx -1, got ", class_idx);
    if (!std::isfinite(psi)) sg2::fail(sg2::ErrorKind::invalid_argument, "truncation psi must be finite, got ", psi);
    sg2::NoiseSpec noise;
    noise.mode = noise_of(noise_mode);
    elements(n, int64_t(cfg.img_channels) * cfg.height() * cfg.width(), "img_out");
    const Busy busy(*generator);
    std::vector<uint32_t> s(seeds, seeds + n);
    sg2::Tensor c;
    if (cfg.c_dim > 0) c = sg2::one_hot(std::vector<int>(static_cast<size_t>(n), class_idx), cfg.c_dim);
    if (noise.mode == sg2::NoiseMode::random) noise.keys.assign(seeds, seeds + n);
    sg2::Truncation tr;
    tr.psi = psi;
    copy_out(generator->gen.generate(sg2::z_from_seeds(s, cfg.z_dim), c, tr, noise), img_out);
  });
}

sg2_status sg2_to_uint8(const float* img, int channels, int height, int width, uint8_t* out) {
  return guarded([&] {
    need(img, "img");
    need(out, "out");
    if (channels < 1 || channels > 4 || height <= 0 || width <= 0)
      sg2::fail(sg2::ErrorKind::invalid_argument, "image size ", channels, "x", height, "x", width,
                ": sizes must be positive and channels 1-4 (an 8-bit image is gray, gray + alpha, RGB or RGBA)");
    const int64_t count = elements(int64_t(channels) * height, width, "img");
    sg2::Tensor t({1, channels, height, width}, std::vector<float>(img, img + count));
    const sg2::Image8 im = sg2::to_image8(t, 0);
    std::memcpy(out, im.pixels.data(), im.pixels.size());
  });
}

sg2_status sg2_write_png(const char* path, const uint8_t* pixels, int width, int height, int channels) {
  return guarded([&] {
    need(path, "path");
    need(pixels, "pixels");
    if (*path == '\0') sg2::fail(sg2::ErrorKind::invalid_argument, "the path is empty: give the PNG file's name");
    if (channels < 1 || channels > 4 || width <= 0 || height <= 0)
      sg2::fail(sg2::ErrorKind::invalid_argument, "image ", width, "x", height, "x", channels,
                ": sizes must be positive and channels 1-4");
    elements(int64_t(width) * height, channels, "pixels");
    sg2::Image8 im;
    im.width = width;
    im.height = height;
    im.channels = channels;
    im.pixels.assign(pixels, pixels + size_t(width) * size_t(height) * size_t(channels));
    sg2::write_png(path, im);
  });
}

sg2_status sg2_default_model_path(char* buf, size_t size, size_t* needed) {
  return guarded([&] {
    const std::string p = sg2::default_model_path();
    if (needed != nullptr) *needed = p.size() + 1;
    if (buf == nullptr || size < p.size() + 1)
      sg2::fail(sg2::ErrorKind::invalid_argument, "buffer of ", size, " bytes is too small for the path (",
                p.size() + 1, " bytes)");
    std::memcpy(buf, p.c_str(), p.size() + 1);
  });
}

}  // extern "C"
