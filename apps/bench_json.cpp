// sg2 bench: JSON output and reference figures (bench_json.h); the CLI's one nlohmann/json file.
#include "bench_json.h"

#include <nlohmann/json.hpp>

#include "bench_reference_json.h"  // generated from apps/bench_reference.json
#include "sg2/error.h"

namespace sg2::cli {

struct Json::Impl {
  nlohmann::json j;
};

Json::Json() : impl_(std::make_unique<Impl>()) {}
Json::Json(double v) : Json() { impl_->j = v; }
Json::Json(int v) : Json() { impl_->j = v; }
Json::Json(int64_t v) : Json() { impl_->j = v; }
Json::Json(bool v) : Json() { impl_->j = v; }
Json::Json(const char* v) : Json() { impl_->j = std::string(v); }
Json::Json(const std::string& v) : Json() { impl_->j = v; }
Json::Json(const std::vector<std::string>& v) : Json() { impl_->j = v; }
Json::Json(const Json& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Json& Json::operator=(const Json& other) {
  if (this != &other) impl_->j = other.impl_->j;
  return *this;
}
Json::~Json() = default;

Json& Json::set(const std::string& key, const Json& value) {
  impl_->j[key] = value.impl_->j;
  return *this;
}

Json& Json::append(const std::string& key, const Json& value) {
  impl_->j[key].push_back(value.impl_->j);
  return *this;
}

Json& Json::push(const Json& value) {
  impl_->j.push_back(value.impl_->j);
  return *this;
}

std::string Json::dump(int indent) const { return impl_->j.dump(indent); }

namespace {

/// config -> precision -> [numbers] of a section of the reference file.
void read_table(const nlohmann::json& configs,
                std::map<std::pair<std::string, std::string>, std::vector<double>>& out) {
  for (const auto& [config, precisions] : configs.items())
    for (const auto& [precision, values] : precisions.items())
      out[{config, precision}] = values.get<std::vector<double>>();
}

}  // namespace

BenchReference::BenchReference() {
  try {
    const nlohmann::json j = nlohmann::json::parse(kBenchReferenceJson);
    device = j.at("device").get<std::string>();
    floors_source = j.at("floors").at("source").get<std::string>();
    official_source = j.at("official").at("source").get<std::string>();
    cpu_source = j.at("cpu_official").at("source").get<std::string>();
    read_table(j.at("floors").at("configs"), floors_);
    read_table(j.at("official").at("configs"), official_);
    for (const auto& [config, rows] : j.at("cpu_official").at("configs").items())
      cpu_[config] = rows.get<std::vector<std::vector<double>>>();
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::internal, "apps/bench_reference.json (compiled in): ", e.what());
  }
}

double BenchReference::floor_us(const std::string& config, const std::string& precision, int batch) const {
  const auto it = floors_.find({config, precision});
  if (it == floors_.end() || it->second.size() < 2) return -1;
  return it->second[batch == 1 ? 0 : 1];
}

bool BenchReference::official(const std::string& config, const std::string& precision, double* n1_ms,
                              double* img_s) const {
  const auto it = official_.find({config, precision});
  if (it == official_.end() || it->second.size() < 2) return false;
  *n1_ms = it->second[0];
  *img_s = it->second[1];
  return true;
}

double BenchReference::cpu_official(const std::string& config, int threads, int batch) const {
  const auto it = cpu_.find(config);
  if (it == cpu_.end()) return -1;
  for (const std::vector<double>& r : it->second)
    if (r.size() >= 3 && int(r[0]) == threads && (int(r[1]) == batch || (batch > 1 && int(r[1]) > 1))) return r[2];
  return -1;
}

bool BenchReference::has_cpu(const std::string& config) const { return cpu_.count(config) > 0; }

}  // namespace sg2::cli
