// sg2 tests: shared helpers — data paths, comparisons with printed tolerances.
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "sg2/image.h"
#include "sg2/model.h"
#include "sg2/tensor.h"

namespace sg2::test {

/// The Architecture an official name stands for ("skip", "orig", "resnet"); throws otherwise.
inline Architecture architecture(const std::string& name) {
  Architecture a = Architecture::skip;
  if (!parse_architecture(name, &a)) throw std::invalid_argument("unknown architecture " + name);
  return a;
}

/// Absolute path of a file in the source tree ("tests/data/fixtures/tiny32/z_s0.npy").
std::string source_path(const std::string& rel);
/// A fresh empty directory under the build tree's temp area, unique per test.
std::string temp_dir(const std::string& name);

/// max |a - b|, mean |a - b| and PSNR over the [-1, 1] range (10 log10(4 / MSE)).
struct DiffStats {
  double max_abs = 0, mean_abs = 0, psnr = 0;
  int64_t first_bad = -1;  ///< first index over the tolerance given to compare(), -1 if none
};
DiffStats diff_stats(const Tensor& a, const Tensor& b, double tol = 0);

/// gtest assertion: same shape and max |a - b| <= tol; prints max, mean, PSNR and the first
/// mismatch with the case label.
::testing::AssertionResult tensors_near(const Tensor& a, const Tensor& b, double tol, const std::string& label);

/// gtest assertion: two 8-bit images of equal size differ by at most 1 level on at most
/// `max_frac` of the values (the fixtures' PNG bound: 1 level on 0.2 %).
::testing::AssertionResult images_near(const Image8& a, const Image8& b, double max_frac, const std::string& label);

}  // namespace sg2::test
