// sg2: locating the bundled model (default_model.h, design.md §6).
#include "sg2/default_model.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "sg2/error.h"
#include "sg2/text.h"

namespace sg2 {

namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dir_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// "/a/b/../c" -> "/a/c" (lexically; only for readable messages and de-duplication).
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string p = path.substr(i, j - i);
    if (p == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (path.empty() || path[0] != '/')
        parts.push_back(p);
    } else if (!p.empty() && p != ".") {
      parts.push_back(p);
    }
    i = j + 1;
  }
  std::string out = (!path.empty() && path[0] == '/') ? "/" : "";
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + parts[k];
  return out.empty() ? "." : out;
}

std::string executable_dir() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  return dir_name(std::string(buf.data(), static_cast<size_t>(n)));
}

std::string library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&default_model_candidates), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string lib = info.dli_fname;
  std::vector<char> buf(4096);
  if (::realpath(lib.c_str(), buf.data()) != nullptr) lib = buf.data();
  return dir_name(lib);
}

}  // namespace

const char* default_model_relative_path() { return "digits32/digits32.pkl"; }

std::vector<std::string> default_model_candidates() {
  const char* env = std::getenv("SG2_MODEL");
  if (env != nullptr && *env != '\0') return {env};
  std::vector<std::string> out;
  auto add_root = [&](const std::string& dir) {
    if (dir.empty()) return;
    for (const std::string& root : {dir + "/models", dir + "/../share/sg2/models"}) {
      std::string p = normalize(root + "/" + default_model_relative_path());
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  };
  add_root(executable_dir());
  add_root(library_dir());
  const std::string lib = library_dir();  // <prefix>/lib/<multiarch>/libsg2.so (Debian's /usr layout)
  if (!lib.empty()) {
    std::string p = normalize(lib + "/../../share/sg2/models/" + default_model_relative_path());
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

std::string default_model_path() {
  const std::vector<std::string> candidates = default_model_candidates();
  const char* env = std::getenv("SG2_MODEL");
  if (env != nullptr && *env != '\0') {
    if (is_regular_file(env)) return env;
    fail_hint(ErrorKind::io,
              "point SG2_MODEL at a model file or checkpoint, or unset it to use the bundled digits32 model",
              "SG2_MODEL is set to '", printable(env, 200), "', which is not a readable file");
  }
  for (const std::string& p : candidates)
    if (is_regular_file(p)) return p;
  std::string looked;
  for (const std::string& p : candidates) looked += (looked.empty() ? "" : ", ") + p;
  fail_hint(ErrorKind::io,
            "pass a model path, set SG2_MODEL=FILE, or reinstall sg2 (cmake --install puts it under "
            "<prefix>/share/sg2/models/)",
            "the bundled model (", default_model_relative_path(), ") was not found; looked in: ", looked);
}

Model load_default_model() { return load_model(default_model_path()); }

}  // namespace sg2
