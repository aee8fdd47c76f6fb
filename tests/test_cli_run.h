// sg2 tests: running the `sg2` CLI binary (SG2_CLI) and small model files for CLI/API tests.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sg2/image.h"
#include "sg2/model.h"
#include "sg2/random_model.h"
#include "test_util.h"

extern char** environ;

namespace sg2::test {

/// What one run of the CLI produced.
struct CliResult {
  int status = -1;  ///< exit status (128 + signal when killed)
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

inline bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

/// True for the variables of cluster launchers that sg2 reads to shard a run (sg2/shard.h).
inline bool is_launcher_variable(const std::string& name) {
  for (const char* p : {"SLURM_", "OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID"})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

/// Runs `sg2 args...` (or `exe args...` when exe is given) with stdin from /dev/null, capturing
/// stdout and stderr. `env` entries ("NAME=value") are added to, or replace, the environment;
/// "NAME=" with nothing after '=' removes NAME. The launchers' variables (SLURM_*, OMPI_*, PMI_*,
/// ...) of the test's own environment are not passed on, so that a suite run under srun or mpirun
/// does not shard its runs; only those given in `env` reach the command.
inline CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                         const std::string& exe = SG2_CLI) {
  static int counter = 0;
  const std::string base = "/tmp/sg2_cli_run_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    const size_t eq = s.find('=');
    if (eq != std::string::npos && !is_launcher_variable(s.substr(0, eq))) vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (const std::string& s : env) {
    const size_t eq = s.find('=');
    if (eq + 1 == s.size())
      vars.erase(s.substr(0, eq));
    else
      vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::vector<std::string> env_s;
  for (const auto& [k, v] : vars) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  CliResult r;
  pid_t pid = 0;
  if (::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data()) == 0) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  posix_spawn_file_actions_destroy(&fa);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  return r;
}

/// A readable description of a run for assertion messages.
inline std::string describe(const CliResult& r) {
  return "exit " + std::to_string(r.status) + "\n--- stdout ---\n" + r.out + "--- stderr ---\n" + r.err;
}

/// Small random generators saved as model files (fast on the CPU backend).
inline ModelConfig tiny_config(int c_dim = 0, int channels = 3) {
  return make_config(16, 128, 16, 8, 8, c_dim, channels, 2, Architecture::skip, 256.0f, 2);
}
inline std::string write_tiny_model(const std::string& dir, int c_dim = 0, int channels = 3,
                                    const std::string& name = "tiny.safetensors") {
  const std::string path = dir + "/" + name;
  save_model_file(path, make_random_model(tiny_config(c_dim, channels), 5));
  return path;
}

/// Width and height from a PNG's IHDR ({0, 0} when there is none).
inline std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  auto be32 = [&](size_t o) {
    return uint32_t(uint8_t(png[o])) << 24 | uint32_t(uint8_t(png[o + 1])) << 16 | uint32_t(uint8_t(png[o + 2])) << 8 |
           uint32_t(uint8_t(png[o + 3]));
  };
  if (png.size() < 24 || png.compare(12, 4, "IHDR") != 0) return {0, 0};
  return {be32(16), be32(20)};
}

/// `full` downscaled by f with docs/bulk.md's box filter (`--size`): per channel, (sum of the f x f
/// pixels + f*f/2) / (f*f), in integers.
inline Image8 box_downscale(const Image8& full, int f) {
  Image8 o;
  o.width = full.width / f;
  o.height = full.height / f;
  o.channels = full.channels;
  o.pixels.resize(size_t(o.width) * o.height * o.channels);
  const int C = full.channels;
  for (int y = 0; y < o.height; ++y)
    for (int x = 0; x < o.width; ++x)
      for (int c = 0; c < C; ++c) {
        unsigned sum = 0;
        for (int i = 0; i < f; ++i)
          for (int j = 0; j < f; ++j) sum += full.pixels[size_t(((y * f + i) * full.width + x * f + j) * C + c)];
        o.pixels[size_t((y * o.width + x) * C + c)] = uint8_t((sum + unsigned(f * f) / 2) / unsigned(f * f));
      }
  return o;
}

/// Whether two images have the same size, channels and pixels.
inline bool same_pixels(const Image8& a, const Image8& b) {
  return a.width == b.width && a.height == b.height && a.channels == b.channels && a.pixels == b.pixels;
}

/// Fixture and bundled-model paths.
inline std::string fixture(const std::string& rel) { return source_path("tests/data/fixtures/" + rel); }
inline std::string digits32() { return source_path("models/digits32/digits32.pkl"); }
inline std::string digits32_golden(const std::string& name) { return source_path("models/digits32/goldens/" + name); }

}  // namespace sg2::test
