// sg2: the Generator front end — validation, batching, device choice (generator.h).
#include "sg2/generator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "engine/backend.h"
#include "engine/generator_access.h"
#include "sg2/error.h"
#include "sg2/random_state.h"
#include "sg2/text.h"
#include "util/text_util.h"

namespace sg2 {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::automatic:
      return "auto";
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

Precision parse_precision(const std::string& s) {
  if (s == "auto") return Precision::automatic;
  if (s == "fp32") return Precision::fp32;
  if (s == "tf32") return Precision::tf32;
  if (s == "fp16") return Precision::fp16;
  fail(ErrorKind::invalid_argument, "unknown precision '", s, "' (expected auto, fp32, tf32 or fp16)");
}

const char* to_string(NoiseMode m) {
  switch (m) {
    case NoiseMode::const_:
      return "const";
    case NoiseMode::random:
      return "random";
    case NoiseMode::none:
      return "none";
  }
  return "?";
}

NoiseMode parse_noise_mode(const std::string& s) {
  if (s == "const") return NoiseMode::const_;
  if (s == "random") return NoiseMode::random;
  if (s == "none") return NoiseMode::none;
  fail(ErrorKind::invalid_argument, "unknown noise mode '", s, "' (expected const, random or none)");
}

Device Device::parse(const std::string& s) {
  Device d;
  if (s == "cpu") return d;
  if (s == "cuda") {
    d.kind = Kind::cuda;
    return d;
  }
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() <= 8 &&
      s.find_first_not_of("0123456789", 5) == std::string::npos) {
    d.kind = Kind::cuda;
    d.index = std::stoi(s.substr(5));
    return d;
  }
  fail(ErrorKind::invalid_argument, "unknown device '", printable(s), "' (expected cpu, cuda or cuda:N)");
}

std::vector<Device> Device::parse_list(const std::string& s) {
  if (s == "cuda:all") {
    std::string why, hint;
    const int n = cuda_device_count(&why, &hint);
    if (n == 0) throw Error(ErrorKind::device, "cuda:all: no usable GPU (" + why + ")", hint);
    std::vector<Device> out;
    for (int i = 0; i < n; ++i) out.push_back(Device{Kind::cuda, i});
    return out;
  }
  if (s.rfind("cuda:", 0) != 0 || s.find(',') == std::string::npos) return {parse(s)};
  std::vector<Device> out;
  size_t pos = 5;
  for (;;) {
    const size_t comma = s.find(',', pos);
    const std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (tok.empty() || tok.size() > 3 || tok.find_first_not_of("0123456789") != std::string::npos)
      fail(ErrorKind::invalid_argument, "unknown device list '", printable(s), "' (expected cuda:N,M,... or cuda:all)");
    out.push_back(Device{Kind::cuda, std::stoi(tok)});
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.size() > 64) fail(ErrorKind::invalid_argument, "device list '", printable(s), "' names more than 64 GPUs");
  return out;
}

std::string Device::str() const { return kind == Kind::cpu ? "cpu" : "cuda:" + std::to_string(index); }

bool cuda_available(std::string* why) { return cuda_device_count(why) > 0; }

int usable_gpu_count() { return cuda_device_count(nullptr); }

void warm_up(const Device& device) {
  if (device.kind == Device::Kind::cuda) cuda_warm_up(device.index);
}

Device Device::best_available() {
  Device d;
  if (cuda_device_count(nullptr) > 0) d.kind = Kind::cuda;
  return d;
}

// --- random noise: a counter-based generator (splitmix64 + Box-Muller) ----------------------

namespace {
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

Tensor random_noise_map(uint64_t seed, uint64_t key, int layer_index, int resolution) {
  return random_noise_map(seed, key, layer_index, resolution, resolution);
}

Tensor random_noise_map(uint64_t seed, uint64_t key, int layer_index, int height, int width) {
  if (height <= 0 || width <= 0) fail(ErrorKind::invalid_argument, "noise map size ", height, "x", width);
  Tensor t({height, width});
  const uint64_t stream = splitmix64(splitmix64(splitmix64(seed) ^ key) ^ static_cast<uint64_t>(layer_index));
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t r = splitmix64(stream ^ splitmix64(static_cast<uint64_t>(i / 2)));
    // Two 32-bit uniforms in (0, 1]; Box-Muller in double, rounded to float.
    const double u1 = (static_cast<double>(r >> 32) + 1.0) / 4294967296.0;
    const double u2 = (static_cast<double>(r & 0xffffffffu) + 0.5) / 4294967296.0;
    const double rad = std::sqrt(-2.0 * std::log(u1));
    const double th = 6.283185307179586 * u2;
    t[i] = static_cast<float>(rad * std::cos(th));
    if (i + 1 < n) t[i + 1] = static_cast<float>(rad * std::sin(th));
  }
  return t;
}

// --- Generator ----------------------------------------------------------------------------

struct Generator::Impl {
  Model model;
  GeneratorOptions options;
  Device device;
  std::unique_ptr<Backend> backend;
  int max_batch = 1;
  std::string dump_dir;
  std::function<void(double)> progress;
  double progress_base = 0, progress_span = 1;                   // this backend call's share of the synthesize call
  NonfiniteSource nonfinite_source = NonfiniteSource::given_ws;  // what a NaN pixel is blamed on (generate sets it)
  std::atomic<bool> in_use{false};                               // a call is running (the Generator is not thread-safe)
};

Generator::Generator(Model model, GeneratorOptions options) : impl_(std::make_unique<Impl>()) {
  check_model(model, "model");
  impl_->model = std::move(model);
  impl_->options = options;
  impl_->device = options.device ? *options.device : Device::best_available();
  if (impl_->device.kind == Device::Kind::cpu) {
    impl_->backend = make_cpu_backend(impl_->model, options.precision, options.threads, options.reference_cpu);
  } else {
    impl_->backend = make_cuda_backend(impl_->model, impl_->device.index, options.precision, options.batch_invariant);
  }
  if (options.max_batch < 0) fail(ErrorKind::invalid_argument, "max_batch ", options.max_batch, " must be >= 0");
  impl_->max_batch = options.max_batch > 0 ? options.max_batch : plan_batch(0).batch;
  impl_->dump_dir = options.dump_dir;
  if (impl_->dump_dir.empty()) {
    const char* env = std::getenv("SG2_DUMP_DIR");
    if (env != nullptr) impl_->dump_dir = env;
  }
}

Generator::~Generator() = default;
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;

namespace {
template <typename T>
T& live(const std::unique_ptr<T>& impl) {
  if (!impl) fail(ErrorKind::invalid_argument, "this sg2::Generator was moved from; use the one it was moved to");
  return *impl;
}
}  // namespace

void Generator::set_progress(std::function<void(double)> callback) {
  Impl& impl = live(impl_);
  impl.progress = std::move(callback);
  if (!impl.progress) {
    impl.backend->set_progress({});
    return;
  }
  Impl* p = &impl;
  impl.backend->set_progress([p](double f) { p->progress(p->progress_base + p->progress_span * f); });
}

const Model& Generator::model() const { return live(impl_).model; }
const ModelConfig& Generator::config() const { return live(impl_).model.config; }
Device Generator::device() const { return live(impl_).device; }
Precision Generator::precision() const { return live(impl_).options.precision; }
int Generator::max_batch() const { return live(impl_).max_batch; }

BatchPlan Generator::plan_batch(int64_t images, int requested, int concurrent) const {
  const Backend& b = *live(impl_).backend;
  if (requested < 0) fail(ErrorKind::invalid_argument, "batch ", requested, " must be >= 0");
  BatchPlan p;
  p.memory = b.memory_name();
  p.bytes_per_image = b.bytes_per_image();
  p.bytes_available = b.memory_available();
  int batch = requested > 0 ? requested : std::max(1, b.preferred_batch());
  if (images >= 1 && images < batch) batch = static_cast<int>(images);  // what a run actually holds
  p.batch = batch;
  if (p.bytes_available < 0 || p.bytes_per_image <= 0) return p;    // nothing to check against
  const int64_t per = p.bytes_per_image * std::max(1, concurrent);  // each generator holds a batch
  const int64_t fit = p.bytes_available / per;
  p.largest_fitting = static_cast<int>(std::min<int64_t>(fit, 1 << 30));
  if (b.splits_on_out_of_memory()) return p;  // run in pieces that fit: never refused
  if (fit < 1)
    fail(ErrorKind::out_of_memory, "one ", config().width(), "x", config().height(),
         " image of this model needs about ", detail::byte_size(per), " of ", p.memory, " on ", b.name(), ", but only ",
         detail::byte_size(p.bytes_available), " are available");
  if (batch <= fit) return p;
  if (requested > 0)
    p.fits = false;
  else
    p.batch = p.largest_fitting;  // the default, cut to what fits
  return p;
}

Backend& GeneratorAccess::backend(Generator& gen) { return *live(gen.impl_).backend; }

namespace {
// Held for the length of a call: a second thread in the same Generator fails at once instead of
// racing it (or waiting forever on the backend's pool or stream).
class InUse {
 public:
  explicit InUse(std::atomic<bool>& flag) : flag_(flag) {
    if (flag_.exchange(true))
      fail(ErrorKind::invalid_argument,
           "this sg2::Generator is running a call on another thread: a Generator is not thread-safe (use one per "
           "thread, or a lock)");
  }
  ~InUse() { flag_.store(false); }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;

 private:
  std::atomic<bool>& flag_;
};
}  // namespace
Generator GeneratorAccess::with_backend(Model model, GeneratorOptions options,
                                        const std::function<std::unique_ptr<Backend>(const Model&)>& make) {
  // Built on the reference CPU backend (cheap to create), which is then replaced.
  GeneratorOptions cpu = options;
  cpu.device = Device{Device::Kind::cpu, 0};
  cpu.precision = Precision::fp32;
  cpu.reference_cpu = true;
  cpu.max_batch = 1;
  Generator g(std::move(model), cpu);
  Generator::Impl& impl = live(g.impl_);
  impl.options = options;
  impl.device = options.device ? *options.device : Device::best_available();
  impl.backend = make(impl.model);
  if (options.max_batch < 0) fail(ErrorKind::invalid_argument, "max_batch ", options.max_batch, " must be >= 0");
  impl.max_batch = options.max_batch > 0 ? options.max_batch : g.plan_batch(0).batch;
  return g;
}

Tensor Generator::map(const Tensor& z, const Tensor& c, const Truncation& trunc) {
  const ModelConfig& cfg = config();  // throws on a moved-from Generator
  const InUse busy(impl_->in_use);
  if (z.ndim() != 2 || z.dim(1) != cfg.z_dim)
    fail(ErrorKind::invalid_argument, "z must be [N, ", cfg.z_dim, "] for this model, got ", z.shape_str());
  const int64_t N = z.dim(0);
  if (cfg.c_dim > 0) {
    // "No label" is a tensor without dimensions; [0, c_dim] is a valid label for zero samples.
    if (c.ndim() == 0 && c.empty())
      fail(ErrorKind::invalid_argument, "this model is conditional (c_dim ", cfg.c_dim,
           "): a class label is required, one of 0..", cfg.c_dim - 1);
    if (c.ndim() != 2 || c.dim(0) != N || c.dim(1) != cfg.c_dim)
      fail(ErrorKind::invalid_argument, "c must be [", N, ", ", cfg.c_dim, "], got ", c.shape_str());
  } else if (!c.empty() && !(c.ndim() == 2 && c.dim(1) == 0)) {
    fail(ErrorKind::invalid_argument, "this model is unconditional (c_dim 0) but a label ", c.shape_str(),
         " was given");
  }
  if (!std::isfinite(trunc.psi)) fail(ErrorKind::invalid_argument, "truncation psi must be finite, got ", trunc.psi);
  if (trunc.cutoff && *trunc.cutoff < 0)
    fail(ErrorKind::invalid_argument, "truncation cutoff must be >= 0, got ", *trunc.cutoff);
  if (!trunc.cutoff || *trunc.cutoff > 0) require_finite_w_avg(impl_->model, trunc.psi);  // the rows it lerps
  for (float v : z.vec())
    if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "z contains NaN or infinite values");
  if (cfg.c_dim > 0)
    for (float v : c.vec())
      if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "the class label c contains NaN or infinite values");
  std::vector<Tensor> parts;
  for (int64_t b = 0; b < N; b += impl_->max_batch) {
    int64_t e = std::min<int64_t>(N, b + impl_->max_batch);
    Tensor cz = z.slice0(b, e);
    Tensor cc = cfg.c_dim > 0 ? c.slice0(b, e) : Tensor();
    parts.push_back(impl_->backend->map(cz, cc, trunc, b == 0 ? impl_->dump_dir : std::string()));
  }
  if (parts.empty()) return Tensor({0, cfg.num_ws, cfg.w_dim});
  return concat0(parts);
}

Tensor Generator::synthesize(const Tensor& ws, const NoiseSpec& noise) {
  const ModelConfig& cfg = config();
  const InUse busy(impl_->in_use);
  if (ws.ndim() != 3 || ws.dim(1) != cfg.num_ws || ws.dim(2) != cfg.w_dim)
    fail(ErrorKind::invalid_argument, "ws must be [N, ", cfg.num_ws, ", ", cfg.w_dim, "] for this model, got ",
         ws.shape_str());
  for (float v : ws.vec())
    if (!std::isfinite(v)) fail(ErrorKind::invalid_argument, "ws contains NaN or infinite values");
  const int64_t N = ws.dim(0);
  if (noise.mode == NoiseMode::random && !noise.keys.empty() && static_cast<int64_t>(noise.keys.size()) != N)
    fail(ErrorKind::invalid_argument, "noise keys: ", noise.keys.size(), " given for ", N, " samples");
  const auto layers = noise_layers(cfg);
  if (!noise.maps.empty()) {
    if (noise.mode != NoiseMode::const_)
      fail(ErrorKind::invalid_argument, "noise maps are only used with noise mode const");
    if (!cfg.synthesis.use_noise)
      fail(ErrorKind::invalid_argument, "this model has no noise inputs; noise maps cannot be used");
    if (static_cast<int64_t>(noise.maps.size()) != N)
      fail(ErrorKind::invalid_argument, "noise maps: ", noise.maps.size(), " rows given for ", N, " samples");
    for (const auto& row : noise.maps) {
      if (row.size() != layers.size())
        fail(ErrorKind::invalid_argument, "noise maps: ", row.size(), " maps given, the model has ", layers.size(),
             " noise layers");
      for (size_t l = 0; l < layers.size(); ++l)
        if (row[l].ndim() != 2 || row[l].dim(0) != layers[l].height || row[l].dim(1) != layers[l].width)
          fail(ErrorKind::invalid_argument, "noise map ", l, " (", layers[l].layer, ") must be [", layers[l].height,
               ", ", layers[l].width, "], got ", row[l].shape_str());
    }
  }
  std::vector<Tensor> parts;
  for (int64_t b = 0; b < N; b += impl_->max_batch) {
    int64_t e = std::min<int64_t>(N, b + impl_->max_batch);
    NoiseSpec part;
    part.mode = noise.mode;
    part.seed = noise.seed;
    if (noise.mode == NoiseMode::random)
      for (int64_t n = b; n < e; ++n)
        part.keys.push_back(noise.keys.empty() ? static_cast<uint64_t>(n) : noise.keys[n]);
    if (!noise.maps.empty()) part.maps.assign(noise.maps.begin() + b, noise.maps.begin() + e);
    impl_->progress_base = double(b) / double(N);
    impl_->progress_span = double(e - b) / double(N);
    parts.push_back(impl_->backend->synthesize(ws.slice0(b, e), part, b == 0 ? impl_->dump_dir : std::string()));
    require_finite_images(parts.back(), b, impl_->nonfinite_source);
  }
  if (parts.empty()) return Tensor({0, cfg.img_channels, cfg.height(), cfg.width()});
  return concat0(parts);
}

Tensor Generator::generate(const Tensor& z, const Tensor& c, const Truncation& trunc, const NoiseSpec& noise) {
  Tensor ws = map(z, c, trunc);
  Impl& impl = live(impl_);
  impl.nonfinite_source = std::fabs(trunc.psi) <= 1 ? NonfiniteSource::mapping : NonfiniteSource::truncation;
  struct Reset {
    Impl& i;
    ~Reset() { i.nonfinite_source = NonfiniteSource::given_ws; }
  } reset{impl};
  return synthesize(ws, noise);
}

// --- inputs -------------------------------------------------------------------------------

Tensor z_from_seed(uint32_t seed, int z_dim) { return z_from_seeds({seed}, z_dim); }

Tensor z_from_seeds(const std::vector<uint32_t>& seeds, int z_dim) {
  if (z_dim < 0) fail(ErrorKind::invalid_argument, "z_dim ", z_dim);
  Tensor z({static_cast<int64_t>(seeds.size()), z_dim});
  for (size_t n = 0; n < seeds.size(); ++n) {
    RandomState rnd(seeds[n]);
    for (int i = 0; i < z_dim; ++i) z[static_cast<int64_t>(n) * z_dim + i] = static_cast<float>(rnd.gauss());
  }
  return z;
}

Tensor one_hot(const std::vector<int>& classes, int c_dim) {
  if (c_dim == 0) return Tensor();  // unconditional: no label, whatever the classes
  if (c_dim < 0) fail(ErrorKind::invalid_argument, "c_dim ", c_dim);
  Tensor c({static_cast<int64_t>(classes.size()), c_dim});
  for (size_t n = 0; n < classes.size(); ++n) {
    if (classes[n] < 0 || classes[n] >= c_dim)
      fail(ErrorKind::invalid_argument, "class ", classes[n], " is out of range: this model has classes 0..",
           c_dim - 1);
    c[static_cast<int64_t>(n) * c_dim + classes[n]] = 1.0f;
  }
  return c;
}

TfSeedInputs tf_seed_inputs(uint32_t seed, const ModelConfig& config) {
  TfSeedInputs out;
  RandomState rnd(seed);
  out.z = Tensor({1, config.z_dim});
  for (int i = 0; i < config.z_dim; ++i) out.z[i] = static_cast<float>(rnd.gauss());
  for (const NoiseLayer& l : noise_layers(config)) {
    Tensor m({l.height, l.width});
    for (int64_t i = 0; i < m.numel(); ++i) m[i] = static_cast<float>(rnd.gauss());
    out.noise_maps.push_back(std::move(m));
  }
  return out;
}

namespace {
/// `s` without leading and trailing blanks (spaces, tabs).
std::string trim_blanks(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}
}  // namespace

std::vector<uint32_t> parse_seeds(const std::string& text) {
  std::vector<uint32_t> seeds;
  auto parse_one = [&](const std::string& raw, const std::string& whole) -> uint32_t {
    const std::string tok = trim_blanks(raw);
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos)
      fail(ErrorKind::invalid_argument, "bad seed '", whole, "': seeds are integers in [0, 4294967295]");
    // Leading zeros are the number they are ("007" is 7): compare the significant digits only.
    const size_t first = std::min(tok.find_first_not_of('0'), tok.size() - 1);
    const std::string digits = tok.substr(first);
    if (digits.size() > 10 || std::stoull(digits) > 4294967295ull)
      fail(ErrorKind::invalid_argument, "seed ", tok, " is out of range: seeds are integers in [0, 4294967295]");
    return static_cast<uint32_t>(std::stoull(digits));
  };
  if (trim_blanks(text).empty()) fail(ErrorKind::invalid_argument, "no seeds given");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string tok = trim_blanks(text.substr(pos, comma - pos));
    pos = comma + 1;
    size_t dash = tok.find('-', 1);
    if (dash != std::string::npos) {
      uint32_t a = parse_one(tok.substr(0, dash), tok), b = parse_one(tok.substr(dash + 1), tok);
      if (b < a) fail(ErrorKind::invalid_argument, "bad seed range '", tok, "': the end is below the start");
      if (uint64_t(b) - a + seeds.size() > 10000000ull)
        fail(ErrorKind::invalid_argument, "seed range '", tok, "' is too long (at most 10,000,000 seeds in all)");
      for (uint64_t s = a; s <= b; ++s) seeds.push_back(static_cast<uint32_t>(s));
    } else {
      seeds.push_back(parse_one(tok, tok));
    }
    if (comma == text.size()) break;
  }
  return seeds;
}

}  // namespace sg2
