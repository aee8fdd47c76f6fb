// Tests of the dataset archive writer (formats/dataset_zip.cpp): dataset_tool.py's names and
// dataset.json, archives read back by Python's zipfile with the properties the official training
// loader relies on (tests/check_dataset_zip.py), zip64 past 65,535 entries, no half archive on an
// unfinished run or a write failure, and shard archives merged by tools/merge_dataset_zips.py.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sg2/dataset_zip.h"
#include "sg2/error.h"
#include "sg2/image.h"
#include "test_cli_run.h"
#include "test_util.h"
#include "util/file_util.h"

namespace sg2 {
namespace {

/// Writes the manifest check_dataset_zip.py compares against: "name size sha256" per entry.
struct Manifest {
  std::string text;
  void add(const std::string& name, const std::vector<uint8_t>& data) {
    text += name + " " + std::to_string(data.size()) + " " + detail::sha256_hex(data.data(), data.size()) + "\n";
  }
  void add(const std::string& name, const std::string& data) {
    add(name, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::string save(const std::string& path) const {
    std::ofstream(path) << text;
    return path;
  }
};

test::CliResult check_with_python(const std::string& zip, const std::string& manifest,
                                  const std::vector<std::string>& flags) {
  std::vector<std::string> args = {test::source_path("tests/check_dataset_zip.py"), zip, manifest};
  args.insert(args.end(), flags.begin(), flags.end());
  return test::run_cli(args, {}, SG2_PYTHON);
}

TEST(DatasetZip, NamesAndJsonFollowDatasetTool) {
  EXPECT_EQ(dataset_image_name(0), "00000/img00000000.png");
  EXPECT_EQ(dataset_image_name(999), "00000/img00000999.png");
  EXPECT_EQ(dataset_image_name(1000), "00001/img00001000.png");
  EXPECT_EQ(dataset_image_name(1234567), "01234/img01234567.png");
  EXPECT_EQ(dataset_image_name(99999999), "99999/img99999999.png");
  EXPECT_EQ(dataset_image_name(100000000), "10000/img100000000.png");  // f'{i:08d}'[:5] of 9 digits
  // json.dumps(metadata) of dataset_tool.py: ", " and ": " separators.
  EXPECT_EQ(dataset_json(0, 2, 7), "{\"labels\": [[\"00000/img00000000.png\", 7], [\"00000/img00000001.png\", 7]]}");
  EXPECT_EQ(dataset_json(1000, 1, 0), "{\"labels\": [[\"00001/img00001000.png\", 0]]}");
  EXPECT_EQ(dataset_json(0, 5, std::nullopt), "{\"labels\": null}");
  EXPECT_EQ(dataset_json(0, 0, 3), "{\"labels\": []}");
  EXPECT_THROW(dataset_json(0, 1, -1), Error);
  EXPECT_THROW(dataset_json(UINT64_MAX, 2, 1), Error);
}

TEST(DatasetZip, PythonAndTheTrainingLoaderReadIt) {
  const std::string dir = test::temp_dir("zip");
  Manifest m;
  {
    DatasetZip zip(dir + "/fakes.zip");
    EXPECT_EQ(zip.temp_path(), dir + "/fakes.zip.tmp." + std::to_string(::getpid()));
    EXPECT_TRUE(test::file_exists(zip.temp_path()));
    std::mt19937 rng(3);
    for (uint64_t i = 0; i < 30; ++i) {  // real PNGs, as sg2 generate writes them: 8x8 RGB
      Image8 im;
      im.width = im.height = 8;
      im.channels = 3;
      for (int k = 0; k < 8 * 8 * 3; ++k) im.pixels.push_back(static_cast<uint8_t>(rng()));
      const std::vector<uint8_t> png = encode_png(im);
      zip.add(dataset_image_name(1000 + i), png);  // a shard's block: indices 1000..1029
      m.add(dataset_image_name(1000 + i), png);
    }
    const std::string json = dataset_json(1000, 30, 4);
    zip.finish(json);
    m.add("dataset.json", json);
    EXPECT_EQ(zip.entries(), 30u);
    EXPECT_FALSE(test::file_exists(zip.temp_path()));
  }
  const test::CliResult r = check_with_python(dir + "/fakes.zip", m.save(dir + "/manifest.txt"), {"--images"});
  EXPECT_EQ(r.status, 0) << test::describe(r);
  EXPECT_EQ(r.out, "OK 31 entries\n");

  // Entries of any size (0 bytes included), any order, and a null label list.
  Manifest m2;
  {
    DatasetZip zip(dir + "/raw.ZIP");
    for (int i : {5, 0, 3}) {
      const std::vector<uint8_t> data(static_cast<size_t>(i * 1000), static_cast<uint8_t>(i));
      zip.add(dataset_image_name(uint64_t(i)), data);
      m2.add(dataset_image_name(uint64_t(i)), data);
    }
    zip.finish(dataset_json(0, 3, std::nullopt));
    m2.add("dataset.json", dataset_json(0, 3, std::nullopt));
  }
  const test::CliResult r2 = check_with_python(dir + "/raw.ZIP", m2.save(dir + "/manifest2.txt"), {});
  EXPECT_EQ(r2.status, 0) << test::describe(r2);

  // The checker itself fails on a wrong manifest (a test that can fail).
  Manifest wrong = m2;
  wrong.text = m2.text.substr(0, m2.text.find('\n') + 1);
  const test::CliResult r3 = check_with_python(dir + "/raw.ZIP", wrong.save(dir + "/manifest3.txt"), {});
  EXPECT_EQ(r3.status, 1) << test::describe(r3);
}

TEST(DatasetZip, Zip64PastSixtyFiveThousandEntries) {
  const std::string dir = test::temp_dir("zip64");
  const uint64_t n = 65536 + 1000;
  Manifest m;
  {
    DatasetZip zip(dir + "/many.zip");
    for (uint64_t i = 0; i < n; ++i) {
      const std::vector<uint8_t> data = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8)};
      zip.add(dataset_image_name(i), data);
      m.add(dataset_image_name(i), data);
    }
    const std::string json = dataset_json(0, n, 1);
    zip.finish(json);
    m.add("dataset.json", json);
  }
  test::CliResult r = check_with_python(dir + "/many.zip", m.save(dir + "/manifest.txt"), {"--zip64"});
  EXPECT_EQ(r.status, 0) << test::describe(r);
  EXPECT_EQ(r.out, "OK " + std::to_string(n + 1) + " entries zip64\n");

  // tools/merge_dataset_zips.py reads libarchive's zip64 records and data descriptors: the archive as
  // the only shard of a run gives the same dataset back.
  ASSERT_EQ(std::rename((dir + "/many.zip").c_str(), (dir + "/many-shard0of1.zip").c_str()), 0);
  r = test::run_cli(
      {test::source_path("tools/merge_dataset_zips.py"), dir + "/merged.zip", dir + "/many-shard0of1.zip"}, {},
      SG2_PYTHON);
  ASSERT_EQ(r.status, 0) << test::describe(r);
  EXPECT_EQ(r.out, "merge_dataset_zips: " + std::to_string(n) + " images from 1 archives in " + dir + "/merged.zip\n");
  r = check_with_python(dir + "/merged.zip", dir + "/manifest.txt", {"--zip64"});
  EXPECT_EQ(r.status, 0) << test::describe(r);
}

TEST(DatasetZip, ShardArchivesMergeIntoOneDataset) {
  // Two shards of a conditional run (class 2), images 0-2 and 3-4, merged by tools/merge_dataset_zips.py.
  const std::string dir = test::temp_dir("merge");
  Manifest merged;
  std::vector<std::string> parts;
  const uint64_t begin[] = {0, 3, 5};
  for (int s = 0; s < 2; ++s) {
    parts.push_back(dir + "/fakes-shard" + std::to_string(s) + "of2.zip");
    DatasetZip zip(parts.back());
    for (uint64_t i = begin[s]; i < begin[s + 1]; ++i) {
      const std::vector<uint8_t> data(50 + i, static_cast<uint8_t>(i));
      zip.add(dataset_image_name(i), data);
      merged.add(dataset_image_name(i), data);
    }
    zip.finish(dataset_json(begin[s], begin[s + 1] - begin[s], 2));
  }
  merged.add("dataset.json", dataset_json(0, 5, 2));
  test::CliResult r = test::run_cli(
      {test::source_path("tools/merge_dataset_zips.py"), dir + "/fakes.zip", parts[0], parts[1]}, {}, SG2_PYTHON);
  ASSERT_EQ(r.status, 0) << test::describe(r);
  EXPECT_EQ(r.out, "merge_dataset_zips: 5 images from 2 archives in " + dir + "/fakes.zip\n");
  r = check_with_python(dir + "/fakes.zip", merged.save(dir + "/manifest.txt"), {});
  EXPECT_EQ(r.status, 0) << test::describe(r);
  // The same archive twice: a name in two archives is refused, and no output is left.
  r = test::run_cli({test::source_path("tools/merge_dataset_zips.py"), dir + "/twice.zip", parts[0], parts[0]}, {},
                    SG2_PYTHON);
  EXPECT_EQ(r.status, 1) << test::describe(r);
  EXPECT_NE(r.err.find("00000/img00000000.png is in two archives"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir + "/twice.zip"));
  EXPECT_FALSE(test::file_exists(dir + "/twice.zip.tmp"));
}

TEST(DatasetZip, AnUnfinishedArchiveLeavesNothing) {
  const std::string dir = test::temp_dir("unfinished");
  const std::vector<uint8_t> data(100, 1);
  std::string tmp;
  {
    DatasetZip zip(dir + "/a.zip");
    tmp = zip.temp_path();
    zip.add(dataset_image_name(0), data);
    EXPECT_TRUE(test::file_exists(tmp));
  }  // destroyed without finish(): an exception or an interrupted run unwinding
  EXPECT_FALSE(test::file_exists(dir + "/a.zip"));
  EXPECT_FALSE(test::file_exists(tmp));

  // abandon(), and an existing archive under the name stays as it was.
  std::ofstream(dir + "/b.zip") << "old";
  DatasetZip zip(dir + "/b.zip");
  zip.add(dataset_image_name(0), data);
  zip.abandon();
  zip.abandon();
  EXPECT_EQ(test::slurp(dir + "/b.zip"), "old");
  EXPECT_FALSE(test::file_exists(zip.temp_path()));
  EXPECT_THROW(zip.add(dataset_image_name(1), data), Error);
  EXPECT_THROW(zip.finish("{}"), Error);

  // A finished archive replaces it; moved writers keep working.
  DatasetZip first(dir + "/b.zip");
  DatasetZip second(std::move(first));
  second.add(dataset_image_name(0), data);
  second.finish(dataset_json(0, 1, std::nullopt));
  EXPECT_NE(test::slurp(dir + "/b.zip"), "old");
  EXPECT_THROW(second.finish("{}"), Error);
}

TEST(DatasetZip, AWriteFailureNamesTheArchiveAndLeavesNoFile) {
  // A full disk, emulated by a file size limit: write() fails with EFBIG (SIGXFSZ ignored).
  const std::string dir = test::temp_dir("full");
  struct sigaction ign {
  }, old_sa{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ign, &old_sa);
  rlimit old_lim{};
  ::getrlimit(RLIMIT_FSIZE, &old_lim);
  rlimit lim = old_lim;
  lim.rlim_cur = 3 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string message, tmp;
  ErrorKind kind = ErrorKind::internal;
  int added = 0;
  {
    DatasetZip zip(dir + "/full.zip");
    tmp = zip.temp_path();
    const std::vector<uint8_t> data(100000, 7);
    try {
      for (; added < 100; ++added) zip.add(dataset_image_name(uint64_t(added)), data);
      zip.finish(dataset_json(0, 100, std::nullopt));
    } catch (const Error& e) {
      message = e.what();
      kind = e.kind();
    }
    EXPECT_THROW(zip.add(dataset_image_name(999), data), Error);  // closed after the failure
  }
  ::setrlimit(RLIMIT_FSIZE, &old_lim);
  ::sigaction(SIGXFSZ, &old_sa, nullptr);
  EXPECT_EQ(kind, ErrorKind::io);
  EXPECT_GT(added, 10);  // the failure comes from add(), mid-run (3 MiB allowed, 100 entries of 100 kB)
  EXPECT_LT(added, 100);
  EXPECT_EQ(message, dir +
                         "/full.zip: cannot write: Write error: File too large (the process's file-size limit, "
                         "ulimit -f, or the largest file this file system holds)")
      << message;
  EXPECT_FALSE(test::file_exists(dir + "/full.zip"));
  EXPECT_FALSE(test::file_exists(tmp));
}

TEST(DatasetZip, RefusesBadNamesAndPaths) {
  const std::string dir = test::temp_dir("bad");
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return std::string(to_string(e.kind())) + ": " + e.what();
    }
    return "no error";
  };
  EXPECT_EQ(
      error_of([&] { DatasetZip z(dir + "/x.tar"); }),
      "invalid_argument: " + dir + "/x.tar: a dataset archive's name must end in .zip (the training code requires it)");
  EXPECT_EQ(error_of([&] { DatasetZip z(dir + "/"); }).substr(0, 17), "invalid_argument:");
  EXPECT_EQ(error_of([&] { DatasetZip z(dir + "/no/such/x.zip"); }),
            "io: " + dir + "/no/such/x.zip: cannot write: No such file or directory");
  // The folder writer's fallbacks (issue 23.12): a leftover temporary of an earlier run with the same
  // PID is left alone (another name is taken), and a 255-byte name gets a short temporary name.
  const std::string leftover = dir + "/a.zip.tmp." + std::to_string(::getpid());
  detail::write_file_atomic(leftover, "old", 3);
  {
    DatasetZip z(dir + "/a.zip");
    EXPECT_EQ(z.temp_path(), leftover + ".1");
    z.add(dataset_image_name(0), "x", 1);
    z.finish(dataset_json(0, 1, std::nullopt));
  }
  EXPECT_TRUE(test::file_exists(dir + "/a.zip"));
  EXPECT_EQ(test::slurp(leftover), "old");
  const std::string long_name = dir + "/" + std::string(251, 'n') + ".zip";  // 255 bytes: no room for .tmp.PID
  {
    DatasetZip z(long_name);
    EXPECT_NE(z.temp_path().find("/.sg2-" + std::to_string(::getpid()) + ".tmp"), std::string::npos) << z.temp_path();
    z.add(dataset_image_name(0), "x", 1);
    z.finish(dataset_json(0, 1, std::nullopt));
  }
  EXPECT_TRUE(test::file_exists(long_name));
  DatasetZip zip(dir + "/ok.zip");
  const std::vector<uint8_t> d(3, 0);
  for (const std::string& name :
       std::vector<std::string>{"", "/abs.png", "a//b.png", "a/../b.png", "./a.png", "a/", "dataset.json", "a\\b.png",
                                std::string("caf\xc3\xa9.png"), std::string("a\nb.png"), std::string(5000, 'a')}) {
    const std::string e = error_of([&] { zip.add(name, d); });
    EXPECT_EQ(e.substr(0, 17), "invalid_argument:") << name << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;  // escaped for the terminal
  }
  zip.add("sub/dir/file.png", d);  // still usable after refused names
  zip.finish(dataset_json(0, 0, std::nullopt));
  EXPECT_TRUE(test::file_exists(dir + "/ok.zip"));
}

}  // namespace
// sg2 generate --outdir NAME.zip: the same PNG bytes as the files a folder run writes, in
// dataset_tool.py's names and order, the labels of a conditional model, checked by Python's zipfile
// and the training loader's assumptions; shards write NAME-shardIofN.zip with global names; formats
// that are not PNG, --save-ws and --grid are refused.
TEST(DatasetZip, GenerateWritesTheDatasetToolLayout) {
  const std::string dir = test::temp_dir("genzip");
  ASSERT_EQ(test::run_cli(
                {"generate", "--device", "cpu", "--seeds", "5-11", "--class", "2", "--outdir", dir + "/files", "-q"})
                .status,
            0);
  test::CliResult r = test::run_cli(
      {"generate", "--device", "cpu", "--seeds", "5-11", "--class", "2", "--outdir", dir + "/set.zip", "-q"});
  ASSERT_EQ(r.status, 0) << test::describe(r);
  Manifest m;
  std::string labels;
  for (int i = 0; i < 7; ++i) {
    const std::string name = dataset_image_name(uint64_t(i));
    m.add(name, detail::read_file(dir + "/files/seed" + std::string(i + 5 < 10 ? "000" : "00") + std::to_string(i + 5) +
                                  ".png"));
  }
  m.add("dataset.json", dataset_json(0, 7, 2));
  const test::CliResult check = check_with_python(dir + "/set.zip", m.save(dir + "/set.manifest"), {"--images"});
  EXPECT_EQ(check.status, 0) << test::describe(check);
  EXPECT_FALSE(test::file_exists(dir + "/set.zip.tmp." + std::to_string(::getpid())));
  // shards: global names, one archive each
  for (int s = 0; s < 2; ++s) {
    r = test::run_cli({"generate", "--device", "cpu", "--seeds", "5-11", "--class", "2", "--outdir", dir + "/part.zip",
                       "--shard", std::to_string(s) + "/2", "-q"});
    ASSERT_EQ(r.status, 0) << test::describe(r);
  }
  Manifest p0, p1;
  for (int i = 0; i < 7; ++i) {
    Manifest& p = i < 4 ? p0 : p1;
    p.add(dataset_image_name(uint64_t(i)),
          detail::read_file(dir + "/files/seed" + std::string(i + 5 < 10 ? "000" : "00") + std::to_string(i + 5) +
                            ".png"));
  }
  p0.add("dataset.json", dataset_json(0, 4, 2));
  p1.add("dataset.json", dataset_json(4, 3, 2));
  EXPECT_EQ(check_with_python(dir + "/part-shard0of2.zip", p0.save(dir + "/p0"), {"--images"}).status, 0);
  EXPECT_EQ(check_with_python(dir + "/part-shard1of2.zip", p1.save(dir + "/p1"), {"--images"}).status, 0);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--format", "npy"}, {"--format", "u8npy"}, {"--save-ws"}, {"--grid", "7x1"}}) {
    std::vector<std::string> args = {"generate", "--device", "cpu",      "--seeds",       "5-11",
                                     "--class",  "2",        "--outdir", dir + "/bad.zip"};
    args.insert(args.end(), extra.begin(), extra.end());
    r = test::run_cli(args);
    EXPECT_EQ(r.status, 2) << test::describe(r);
    EXPECT_FALSE(test::file_exists(dir + "/bad.zip"));
  }
}

}  // namespace sg2
