// sg2 tests: shared helpers (test_util.h).
#include "test_util.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace sg2::test {

std::string source_path(const std::string& rel) { return std::string(SG2_SOURCE_DIR) + "/" + rel; }

std::string temp_dir(const std::string& name) {
  const char* base = std::getenv("TMPDIR");
  std::string root = std::string(base && *base ? base : "/tmp") + "/sg2_tests_" + std::to_string(::getpid());
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir =
      root + "/" + (info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("x")) + "_" + name;
  std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) {
  }
  std::filesystem::create_directories(dir);
  return dir;
}

DiffStats diff_stats(const Tensor& a, const Tensor& b, double tol) {
  DiffStats s;
  double sq = 0;
  const int64_t n = std::min(a.numel(), b.numel());
  for (int64_t i = 0; i < n; ++i) {
    double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) d = INFINITY;
    if (d > s.max_abs) s.max_abs = d;
    s.mean_abs += d;
    sq += d * d;
    if (s.first_bad < 0 && d > tol) s.first_bad = i;
  }
  if (n > 0) {
    s.mean_abs /= double(n);
    double mse = sq / double(n);
    s.psnr = mse > 0 ? 10.0 * std::log10(4.0 / mse) : INFINITY;
  }
  return s;
}

::testing::AssertionResult tensors_near(const Tensor& a, const Tensor& b, double tol, const std::string& label) {
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure() << label << ": shape " << a.shape_str() << " vs " << b.shape_str();
  DiffStats s = diff_stats(a, b, tol);
  std::ostringstream os;
  os << label << ": max|diff| " << s.max_abs << " (tol " << tol << "), mean|diff| " << s.mean_abs << ", PSNR " << s.psnr
     << " dB";
  if (s.max_abs <= tol) return ::testing::AssertionSuccess() << os.str();
  os << "; first mismatch at flat index " << s.first_bad << ": " << a[s.first_bad] << " vs " << b[s.first_bad];
  return ::testing::AssertionFailure() << os.str();
}

::testing::AssertionResult images_near(const Image8& a, const Image8& b, double max_frac, const std::string& label) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels)
    return ::testing::AssertionFailure() << label << ": image sizes differ (" << a.width << "x" << a.height << "x"
                                         << a.channels << " vs " << b.width << "x" << b.height << "x" << b.channels
                                         << ")";
  size_t off = 0, worst = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    size_t d = size_t(std::abs(int(a.pixels[i]) - int(b.pixels[i])));
    worst = std::max(worst, d);
    if (d > 0) ++off;
  }
  double frac = a.pixels.empty() ? 0 : double(off) / double(a.pixels.size());
  std::ostringstream os;
  os << label << ": " << off << " of " << a.pixels.size() << " values differ (" << 100 * frac << " %), max " << worst
     << " levels (bound: 1 level on " << 100 * max_frac << " %)";
  if (worst <= 1 && frac <= max_frac) return ::testing::AssertionSuccess() << os.str();
  return ::testing::AssertionFailure() << os.str();
}

}  // namespace sg2::test
