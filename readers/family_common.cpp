// sg2 readers: shared converter helpers (family_common.h).
#include "readers/family_common.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sg2/error.h"
#include "util/text_util.h"

namespace sg2::readers {

std::string name_list(const std::vector<std::string>& names, size_t max) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > max) out += " and " + std::to_string(names.size() - max) + " more";
  return out;
}

int log2_exact(int64_t v) {
  if (v <= 0 || (v & (v - 1)) != 0) return -1;
  int k = 0;
  while ((int64_t(1) << k) < v) ++k;
  return k;
}

std::vector<float> pretty_taps(const std::vector<double>& taps, const std::string& what) {
  if (taps.empty() || taps.size() > 64)
    fail(ErrorKind::unsupported, what, ": unsupported: a resample filter with ", taps.size(), " taps");
  double sum = 0, min_abs = 0;
  for (double t : taps) {
    if (!std::isfinite(t)) fail(ErrorKind::bad_file, what, ": the resample filter has a non-finite tap");
    sum += t;
    if (t != 0 && (min_abs == 0 || std::fabs(t) < min_abs)) min_abs = std::fabs(t);
  }
  if (sum == 0 || min_abs == 0) fail(ErrorKind::unsupported, what, ": unsupported: a resample filter summing to 0");
  // Integers when the taps are small integer multiples of the smallest one.
  bool integral = true;
  std::vector<float> ints;
  for (double t : taps) {
    const double q = t / min_abs;
    if (std::fabs(q - std::round(q)) > 1e-4 * std::max(1.0, std::fabs(q)) || std::fabs(q) > 1e6) integral = false;
    ints.push_back(static_cast<float>(std::round(q)));
  }
  if (integral) return ints;
  std::vector<float> out;
  for (double t : taps) out.push_back(static_cast<float>(t / sum));
  return out;
}

std::vector<float> filter_taps(const Tensor& f, const std::string& what) {
  if (f.ndim() == 1) {
    std::vector<double> t(f.vec().begin(), f.vec().end());
    return pretty_taps(t, what);
  }
  if (f.ndim() != 2 || f.dim(0) != f.dim(1) || f.dim(0) < 1 || f.dim(0) > 64)
    fail(ErrorKind::unsupported, what, ": unsupported resample_filter of shape ", f.shape_str());
  const int64_t k = f.dim(0);
  std::vector<double> rows(static_cast<size_t>(k), 0.0), cols(static_cast<size_t>(k), 0.0);
  double total = 0, peak = 0;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const double v = f[i * k + j];
      rows[static_cast<size_t>(i)] += v;
      cols[static_cast<size_t>(j)] += v;
      total += v;
      peak = std::max(peak, std::fabs(v));
    }
  if (total == 0 || !std::isfinite(total))
    fail(ErrorKind::unsupported, what, ": unsupported: a resample_filter summing to 0");
  // f = outer(t, t) with sum(t) = 1 (normalised) gives rows == cols == t.
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const double expect = rows[static_cast<size_t>(i)] * cols[static_cast<size_t>(j)] / total;
      if (std::fabs(expect - f[i * k + j]) > 1e-5 * peak ||
          std::fabs(rows[static_cast<size_t>(i)] - cols[static_cast<size_t>(i)]) > 1e-5 * std::fabs(total))
        fail(ErrorKind::unsupported, what, ": unsupported: non-separable resample filter ", f.shape_str(),
             " (it is not the outer product of one 1-D filter with itself)");
    }
  return pretty_taps(rows, what);
}

std::vector<int> fp16_resolutions(int img_resolution, int num_fp16_res) {
  std::vector<int> out;
  const int log2r = log2_exact(img_resolution);
  if (num_fp16_res <= 0 || log2r < 2) return out;
  const int first = std::max(1 << std::max(log2r + 1 - num_fp16_res, 0), 8);
  for (int r = 8; r <= img_resolution; r *= 2)
    if (r >= first) out.push_back(r);
  return out;
}

int whole_number(double v, const std::string& what, const char* name) {
  if (!std::isfinite(v) || std::fabs(v) > double(1 << 30) || v != std::floor(v))
    fail(ErrorKind::bad_file, what, ": ", name, " is ", v, ", not a whole number in range");
  return static_cast<int>(v);
}

int dim_int(int64_t v, const std::string& what, const char* tensor) {
  if (v < 0 || v > (int64_t(1) << 30))
    fail(ErrorKind::bad_file, what, ": ", tensor, " gives a size of ", v, ", outside [0, 2^30] (corrupt shape?)");
  return static_cast<int>(v);
}

void set_const_shape(ModelConfig& config, int64_t h, int64_t w, const std::string& what, const char* tensor) {
  auto ok = [](int64_t v) { return v == 1 || v == 2 || v == 4; };
  if (h == 4 && w == 4) {
    config.img_height = config.img_width = 0;
    return;
  }
  if (!ok(h) || !ok(w) || std::max(h, w) != 4)
    fail(ErrorKind::unsupported, what, ": unsupported non-square network: ", tensor, " is ", h, "x", w,
         " pixels; sg2 runs a const of 4x4, or non-square 4x2, 4x1, 2x4 or 1x4 (every block doubling both "
         "sides, the larger side img_resolution)");
  const int R = config.img_resolution;
  config.img_height = static_cast<int>(R / 4 * h);
  config.img_width = static_cast<int>(R / 4 * w);
}

void check_config(const ModelConfig& config, const std::string& what) {
  try {
    config.validate();
  } catch (const Error& e) {
    throw Error(ErrorKind::bad_file, what + ": " + e.message(), e.hint());
  }
}

void check_converted(const Model& model, const std::string& what) {
  const auto problems = validate_model(model);
  if (problems.empty()) return;
  std::ostringstream os;
  os << what << ": the converted generator is inconsistent (" << problems.size() << " problem"
     << (problems.size() > 1 ? "s" : "") << "): ";
  for (size_t i = 0; i < problems.size() && i < 3; ++i) {
    std::string d = problems[i].detail;
    std::replace(d.begin(), d.end(), '\n', ' ');
    os << (i ? "; " : "") << detail::printable(problems[i].name, 80) << ": " << d;
  }
  if (problems.size() > 3) os << "; ...";
  throw Error(ErrorKind::bad_file, os.str());
}

}  // namespace sg2::readers
