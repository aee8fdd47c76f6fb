// How much memory a batch may use: the host memory reader (util/host_memory.h) on fake /proc and
// cgroup trees (v2 nested as Slurm and systemd nest them, v1's memory controller, containers), and
// Generator::plan_batch, the engine's one answer to "how big a batch fits".
#include <gtest/gtest.h>

#include <fstream>

#include "sg2/error.h"
#include "sg2/generator.h"
#include "sg2/random_model.h"
#include "test_util.h"
#include "util/file_util.h"
#include "util/host_memory.h"

using namespace sg2;

namespace {

constexpr int64_t GiB = int64_t(1) << 30;

void put(const std::string& root, const std::string& rel, const std::string& text) {
  const std::string path = root + "/" + rel;
  detail::make_dirs(path.substr(0, path.rfind('/')));
  std::ofstream(path) << text;
}

std::string meminfo(int64_t avail) {
  return "MemTotal:       67108864 kB\nMemFree:        1000 kB\nMemAvailable:   " + std::to_string(avail / 1024) +
         " kB\nBuffers:        0 kB\n";
}

const char* kMountsV2 =
    "25 30 0:22 / /proc rw,nosuid - proc proc rw\n"
    "31 30 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n";
const char* kMountsV1 =
    "31 30 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "32 30 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n";

}  // namespace

TEST(HostMemory, MemAvailableWithoutCgroupLimits) {
  const std::string root = test::temp_dir("mem_plain");
  put(root, "proc/meminfo", meminfo(16 * GiB));
  EXPECT_EQ(detail::host_memory_available(root), 16 * GiB);
}

TEST(HostMemory, NothingReadableIsUnknown) { EXPECT_EQ(detail::host_memory_available(test::temp_dir("mem_none")), -1); }

TEST(HostMemory, NestedCgroupV2LimitsAreReadAtEveryLevel) {
  // A Slurm step: the job's cgroup has the limit, the step's says "max"; the root has no files.
  const std::string root = test::temp_dir("mem_v2");
  put(root, "proc/meminfo", meminfo(64 * GiB));
  put(root, "proc/self/mountinfo", kMountsV2);
  put(root, "proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_5/step_0\n");
  const std::string job = "sys/fs/cgroup/system.slice/slurmstepd.scope/job_5";
  put(root, job + "/memory.max", std::to_string(4 * GiB) + "\n");
  put(root, job + "/memory.current", std::to_string(1 * GiB) + "\n");
  put(root, job + "/step_0/memory.max", "max\n");
  put(root, job + "/step_0/memory.current", "12345\n");
  EXPECT_EQ(detail::host_memory_available(root), 3 * GiB);
  // A tighter limit lower down wins; usage above the limit is 0 left, never negative.
  put(root, job + "/step_0/memory.max", std::to_string(GiB / 2) + "\n");
  put(root, job + "/step_0/memory.current", std::to_string(GiB) + "\n");
  EXPECT_EQ(detail::host_memory_available(root), 0);
}

TEST(HostMemory, ContainerRootCgroupV2) {
  // Inside a cgroup namespace the process's cgroup is "/", whose limit files are at the mount.
  const std::string root = test::temp_dir("mem_ct");
  put(root, "proc/meminfo", meminfo(64 * GiB));
  put(root, "proc/self/mountinfo", kMountsV2);
  put(root, "proc/self/cgroup", "0::/\n");
  put(root, "sys/fs/cgroup/memory.max", std::to_string(8 * GiB) + "\n");
  put(root, "sys/fs/cgroup/memory.current", std::to_string(2 * GiB) + "\n");
  EXPECT_EQ(detail::host_memory_available(root), 6 * GiB);
}

TEST(HostMemory, CgroupV1MemoryController) {
  const std::string root = test::temp_dir("mem_v1");
  put(root, "proc/meminfo", meminfo(64 * GiB));
  put(root, "proc/self/mountinfo", kMountsV1);
  put(root, "proc/self/cgroup", "5:cpu,cpuacct:/slurm/uid_0/job_7\n4:memory:/slurm/uid_0/job_7/step_batch\n");
  const std::string job = "sys/fs/cgroup/memory/slurm/uid_0/job_7";
  put(root, job + "/memory.limit_in_bytes", std::to_string(2 * GiB) + "\n");
  put(root, job + "/memory.usage_in_bytes", std::to_string(GiB / 2) + "\n");
  put(root, job + "/step_batch/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  put(root, job + "/step_batch/memory.usage_in_bytes", "4096\n");
  EXPECT_EQ(detail::host_memory_available(root), 2 * GiB - GiB / 2);
}

TEST(PlanBatch, TheEngineDecidesWhatFits) {
  const ModelConfig cfg = make_config(16, 512, 64, 32, 32, 0, 3, 2, Architecture::skip, 256.0f, 0);
  GeneratorOptions o;
  o.device = Device::parse("cpu");
  Generator gen(make_random_model(cfg, 1), o);
  const BatchPlan def = gen.plan_batch(0);
  EXPECT_GE(def.batch, 1);
  EXPECT_TRUE(def.fits);
  EXPECT_EQ(gen.max_batch(), def.batch);
  EXPECT_GT(def.bytes_per_image, 0);
  EXPECT_EQ(def.memory, "host memory");
  EXPECT_EQ(gen.plan_batch(3).batch, std::min(3, def.batch));  // never more than the run makes
  // A request is kept and checked, never silently changed.
  const BatchPlan two = gen.plan_batch(100, 2);
  EXPECT_EQ(two.batch, 2);
  EXPECT_TRUE(two.fits);
  if (def.bytes_available > 0) {
    const BatchPlan huge = gen.plan_batch(int64_t(1) << 40, 1 << 30);
    EXPECT_FALSE(huge.fits);
    EXPECT_EQ(huge.batch, 1 << 30);
    EXPECT_GT(huge.largest_fitting, 0);
    EXPECT_LT(huge.largest_fitting, 1 << 30);
    // concurrent generators share the memory: fewer fit each
    EXPECT_LE(gen.plan_batch(0, 0, 4).largest_fitting, huge.largest_fitting / 4 + 1);
  }
  EXPECT_THROW(gen.plan_batch(1, -1), Error);
}
