// sg2 util: host memory available to this process (host_memory.h).
#include "util/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace sg2::detail {
namespace {

// A limit of this size or more (cgroup v1 writes 2^63 - 4096 for "no limit") is no limit.
constexpr int64_t kNoLimit = int64_t(1) << 60;

bool read_number(const std::string& path, int64_t* out) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return false;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || v < 0) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

struct Mount {
  std::string root, point;  // the hierarchy's path mounted, and where
};

// cgroup mounts from mountinfo: the v2 one (fstype cgroup2) and v1's memory controller.
void find_mounts(const std::string& root, Mount* v2, Mount* v1_memory) {
  std::ifstream f(root + "/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::vector<std::string> fields;
    for (std::string w; is >> w;) fields.push_back(w);
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || dash + 3 > fields.end()) continue;
    const std::string& fstype = *(dash + 1);
    const std::string& super = *(dash + 3);
    const Mount m{fields[3], fields[4]};
    if (fstype == "cgroup2" && v2->point.empty()) *v2 = m;
    if (fstype == "cgroup" && v1_memory->point.empty()) {
      std::istringstream opts(super);
      for (std::string o; std::getline(opts, o, ',');)
        if (o == "memory") *v1_memory = m;
    }
  }
}

// The folder of cgroup `path` under mount `m`, below `root`.
std::string cgroup_dir(const std::string& root, const Mount& m, const std::string& path) {
  std::string rel = path;
  if (m.root != "/" && rel.compare(0, m.root.size(), m.root) == 0) rel = rel.substr(m.root.size());
  if (!rel.empty() && rel.back() == '/') rel.pop_back();
  return root + m.point + rel;
}

// min over the folder and its parents up to the mount point of (limit - usage).
int64_t tightest(const std::string& dir, const std::string& top, const char* limit_file, const char* usage_file) {
  int64_t best = -1;
  std::string d = dir;
  for (int depth = 0; depth < 64; ++depth) {
    int64_t limit = 0, usage = 0;
    if (read_number(d + "/" + limit_file, &limit) && limit < kNoLimit && read_number(d + "/" + usage_file, &usage)) {
      const int64_t left = std::max<int64_t>(0, limit - usage);
      best = best < 0 ? left : std::min(best, left);
    }
    if (d.size() <= top.size()) break;
    const size_t slash = d.rfind('/');
    if (slash == std::string::npos || slash < top.size()) break;
    d = d.substr(0, slash);
  }
  return best;
}

int64_t min_known(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

}  // namespace

int64_t host_memory_available(const std::string& root) {
  int64_t avail = -1;
  {
    std::ifstream f(root + "/proc/meminfo");
    std::string key;
    long long kb = 0;
    std::string unit;
    while (f >> key >> kb) {
      std::getline(f, unit);
      if (key == "MemAvailable:") avail = int64_t(kb) * 1024;
    }
  }
  Mount v2, v1;
  find_mounts(root, &v2, &v1);
  std::ifstream f(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {  // "0::/path" (v2), "4:memory:/path" (v1)
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (path.empty() || path[0] != '/') continue;
    if (controllers.empty() && !v2.point.empty()) {
      avail = min_known(avail, tightest(cgroup_dir(root, v2, path), root + v2.point, "memory.max", "memory.current"));
    } else if (!v1.point.empty()) {
      std::istringstream cs(controllers);
      for (std::string c; std::getline(cs, c, ',');)
        if (c == "memory")
          avail = min_known(avail, tightest(cgroup_dir(root, v1, path), root + v1.point, "memory.limit_in_bytes",
                                            "memory.usage_in_bytes"));
    }
  }
  return avail;
}

int64_t host_memory_available() { return host_memory_available(""); }

}  // namespace sg2::detail
