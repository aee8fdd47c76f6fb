// sg2 bench: its JSON output (--json) and the reference figures of apps/bench_reference.json, the
// one part of the CLI that uses nlohmann/json (bench_json.cpp), so that the other files compile
// without it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sg2::cli {

/// A JSON value under construction: null, a number, a bool, a string, an array or an object.
class Json {
 public:
  Json();  ///< null
  Json(double v);
  Json(int v);
  Json(int64_t v);
  Json(bool v);
  Json(const char* v);
  Json(const std::string& v);
  Json(const std::vector<std::string>& v);  ///< an array of strings
  Json(const Json& other);
  Json& operator=(const Json& other);
  ~Json();

  /// Sets member `key` of an object (a null value becomes an object first).
  Json& set(const std::string& key, const Json& value);
  /// Appends `value` to array member `key` of an object (created when missing).
  Json& append(const std::string& key, const Json& value);
  /// Appends `value` to this array (a null value becomes an array first).
  Json& push(const Json& value);
  /// The text, indented by `indent` spaces per level.
  std::string dump(int indent = 2) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The reference figures sg2 bench prints beside its own (apps/bench_reference.json, compiled in).
struct BenchReference {
  BenchReference();  ///< parses the compiled-in file
  /// Roofline floor in us/image of (config, precision) at batch 1 or >= 8; < 0 when unknown.
  double floor_us(const std::string& config, const std::string& precision, int batch) const;
  /// The official implementation's (batch-1 ms, best img/s) of (config, precision); false when unknown.
  bool official(const std::string& config, const std::string& precision, double* n1_ms, double* img_s) const;
  /// The official PyTorch CPU wall seconds per image at `threads` and `batch` (a batch > 1 row
  /// stands for every batch > 1); < 0 when unknown.
  double cpu_official(const std::string& config, int threads, int batch) const;
  /// True when the CPU table has figures of `config`.
  bool has_cpu(const std::string& config) const;

  std::string device, official_source, floors_source, cpu_source;

 private:
  std::map<std::pair<std::string, std::string>, std::vector<double>> floors_, official_;
  std::map<std::string, std::vector<std::vector<double>>> cpu_;
};

}  // namespace sg2::cli
