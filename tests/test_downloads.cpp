// --network URL (issue 23, item 4; sg2/download.h): downloads into the cache from a loopback HTTP
// server (tests/tools/http_test_server.py, Python's http.server), the cached copy used with the
// server stopped, and every failure leaving nothing in the cache: 404, a connection that closes
// early, a response over the size limit (announced or not), redirects, refused schemes, offline.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "sg2/download.h"
#include "sg2/error.h"
#include "test_cli_run.h"

using namespace sg2;
using namespace sg2::test;

namespace {

bool has_text(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// The loopback server over `folder`, stopped by stop() or the destructor.
class LoopbackServer {
 public:
  explicit LoopbackServer(const std::string& folder) {
    const std::string port_file = temp_dir("http_port") + "/port";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    const std::string script = source_path("tests/tools/http_test_server.py");
    std::vector<std::string> args = {SG2_PYTHON, script, folder, port_file};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, SG2_PYTHON, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
    for (int i = 0; i < 400 && pid_ > 0 && !file_exists(port_file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    port_ = slurp(port_file);
  }
  ~LoopbackServer() { stop(); }
  bool running() const { return pid_ > 0 && !port_.empty(); }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + port_ + path; }

 private:
  pid_t pid_ = -1;
  std::string port_;
};

/// Every entry of `dir` (names only).
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> v;
  if (!std::filesystem::exists(dir)) return v;
  for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

const char* kCheckpoint = "tests/data/checkpoints/rosinality16.pt";

/// A folder the server serves: the test checkpoint as ck.pt.
std::string served_folder() {
  const std::string dir = temp_dir("served");
  std::filesystem::copy_file(source_path(kCheckpoint), dir + "/ck.pt");
  return dir;
}

}  // namespace

TEST(Downloads, ADownloadIsCachedAndUsedWithoutTheNetwork) {
  LoopbackServer server(served_folder());
  ASSERT_TRUE(server.running());
  const std::string cache = temp_dir("cache");
  DownloadOptions o;
  o.cache_dir = cache;
  uint64_t last_received = 0, calls = 0;
  o.progress = [&](uint64_t received, uint64_t) {
    last_received = received;
    ++calls;
  };
  const std::string url = server.url("/files/ck.pt");
  bool downloaded = false;
  const std::string path = download_cached(url, o, &downloaded);
  EXPECT_TRUE(downloaded);
  EXPECT_EQ(path, cached_download_path(url, o));
  EXPECT_EQ(path.rfind(cache + "/", 0), 0u) << path;
  EXPECT_EQ(slurp(path), slurp(source_path(kCheckpoint)));
  EXPECT_GT(calls, 0u);
  EXPECT_EQ(last_received, slurp(path).size());
  EXPECT_EQ(entries(cache).size(), 1u);  // the file, no temporary

  server.stop();  // from here on, any network access fails
  EXPECT_EQ(download_cached(url, o, &downloaded), path);
  EXPECT_FALSE(downloaded);

  // The CLI: a run with the server stopped uses the cached copy and says nothing about it.
  const std::string out = temp_dir("out");
  CliResult r = run_cli({"generate", "--network", url, "--device", "cpu", "--seeds", "0", "--outdir", out},
                        {"SG2_CACHE_DIR=" + cache});
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_FALSE(has_text(r.err, "downloaded")) << r.err;
  EXPECT_TRUE(file_exists(out + "/seed0000.png"));
}

TEST(Downloads, ProcessesStartingTogetherDownloadOnce) {
  LoopbackServer server(served_folder());
  ASSERT_TRUE(server.running());
  const std::string cache = temp_dir("cache");
  const std::string url = server.url("/files/ck.pt");
  std::vector<std::thread> threads;
  std::vector<int> downloaded(4, 0);
  std::vector<std::string> paths(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      DownloadOptions o;
      o.cache_dir = cache;
      bool d = false;
      paths[size_t(i)] = download_cached(url, o, &d);
      downloaded[size_t(i)] = d;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(downloaded.begin(), downloaded.end(), 1), 1);  // the others waited, then found it
  for (const std::string& p : paths) EXPECT_EQ(slurp(p), slurp(source_path(kCheckpoint)));
  EXPECT_EQ(entries(cache).size(), 1u);  // no lock file, no temporary
}

TEST(Downloads, TheCliDownloadsOnceAndSaysWhere) {
  LoopbackServer server(served_folder());
  ASSERT_TRUE(server.running());
  const std::string cache = temp_dir("cache") + "/nested/sg2";  // created when missing
  const std::string url = server.url("/redirect/ck.pt");        // a redirect is followed
  const std::string out = temp_dir("out");
  CliResult r = run_cli({"generate", "--network", url, "--device", "cpu", "--seeds", "0", "--outdir", out},
                        {"SG2_CACHE_DIR=" + cache});
  ASSERT_EQ(r.status, 0) << describe(r);
  DownloadOptions o;
  o.cache_dir = cache;
  EXPECT_TRUE(has_text(r.err, "sg2 generate: note: downloaded " + url + " into " + cached_download_path(url, o) +
                                  "; later runs use this copy"))
      << r.err;
  CliResult again = run_cli({"generate", "--network", url, "--device", "cpu", "--seeds", "0", "--outdir", out + "2"},
                            {"SG2_CACHE_DIR=" + cache});
  ASSERT_EQ(again.status, 0) << describe(again);
  EXPECT_FALSE(has_text(again.err, "downloaded")) << again.err;
  EXPECT_EQ(slurp(out + "/seed0000.png"), slurp(out + "2/seed0000.png"));
}

TEST(Downloads, FailuresLeaveNothingInTheCache) {
  LoopbackServer server(served_folder());
  ASSERT_TRUE(server.running());
  const std::string cache = temp_dir("cache");
  struct Case {
    std::string path, env, expect;
  };
  const std::vector<Case> cases = {
      {"/files/missing.pt", "", ": the server answered HTTP 404 (not found)"},
      {"/short/ck.pt", "", ": the connection closed after"},
      {"/files/ck.pt", "SG2_DOWNLOAD_MAX_BYTES=1000", ": the response is larger than the limit of 1000 bytes"},
      {"/nolength/ck.pt", "SG2_DOWNLOAD_MAX_BYTES=1000", ": the response is larger than the limit of 1000 bytes"},
      {"/loop", "", ": too many redirects"},
      {"/redirect-ftp", "", ": a redirect to a URL that is not http(s) is refused"},
      {"/empty", "", ": the server sent an empty file"},
  };
  for (const Case& c : cases) {
    const std::string url = server.url(c.path);
    std::vector<std::string> env = {"SG2_CACHE_DIR=" + cache};
    if (!c.env.empty()) env.push_back(c.env);
    CliResult r =
        run_cli({"generate", "--network", url, "--device", "cpu", "--seeds", "0", "--outdir", temp_dir("out")}, env);
    EXPECT_EQ(r.status, 1) << c.path << ": " << describe(r);
    EXPECT_TRUE(has_text(r.err, "sg2 generate: error: cannot download " + url + c.expect)) << c.path << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
    EXPECT_TRUE(entries(cache).empty()) << c.path << ": " << entries(cache).size() << " files left";
  }
  // Without Content-Length and within the limit, the whole body is the file.
  DownloadOptions o;
  o.cache_dir = cache;
  EXPECT_EQ(slurp(download_cached(server.url("/nolength/ck.pt"), o)), slurp(source_path(kCheckpoint)));
}

TEST(Downloads, OfflineAndRefusedUrlsSayWhy) {
  std::string url;
  {
    LoopbackServer server(served_folder());
    ASSERT_TRUE(server.running());
    url = server.url("/files/ck.pt");
  }  // stopped: nothing listens on its port now
  const std::string cache = temp_dir("cache");
  CliResult r =
      run_cli({"generate", "--network", url, "--seeds", "0", "--outdir", temp_dir("out")}, {"SG2_CACHE_DIR=" + cache});
  EXPECT_EQ(r.status, 1) << describe(r);
  EXPECT_TRUE(has_text(
      r.err, "sg2 generate: error: cannot download " + url + ": cannot connect (offline, or the server is down?)"))
      << r.err;
  EXPECT_TRUE(entries(cache).empty());

  CliResult ftp =
      run_cli({"generate", "--network", "ftp://example.org/net.pkl", "--seeds", "0"}, {"SG2_CACHE_DIR=" + cache});
  EXPECT_EQ(ftp.status, 2) << describe(ftp);
  EXPECT_TRUE(
      has_text(ftp.err, "ftp://example.org/net.pkl: only http:// and https:// URLs are downloaded (not ftp://)"))
      << ftp.err;
  // Credentials in a URL never reach a message; control bytes are escaped.
  CliResult secret = run_cli({"generate", "--network", "http://user:hunter2@127.0.0.1:1/a\x1b[2J.pkl", "--seeds", "0"},
                             {"SG2_CACHE_DIR=" + cache});
  EXPECT_EQ(secret.status, 1) << describe(secret);
  EXPECT_FALSE(has_text(secret.err, "hunter2")) << secret.err;
  EXPECT_FALSE(has_text(secret.err, "\x1b")) << secret.err;
  EXPECT_TRUE(has_text(secret.err, "http://***@127.0.0.1:1/a\\x1b[2J.pkl")) << secret.err;
}

TEST(Downloads, CacheFolderAndFileNames) {
  struct Env {  // sets variables for one test and restores them
    std::vector<std::pair<std::string, std::string>> saved;
    void set(const char* name, const char* value) {
      const char* old = std::getenv(name);
      saved.emplace_back(name, old ? std::string("=") + old : "");
      if (value)
        ::setenv(name, value, 1);
      else
        ::unsetenv(name);
    }
    ~Env() {
      for (auto it = saved.rbegin(); it != saved.rend(); ++it)
        if (it->second.empty())
          ::unsetenv(it->first.c_str());
        else
          ::setenv(it->first.c_str(), it->second.c_str() + 1, 1);
    }
  } env;
  env.set("SG2_CACHE_DIR", "/x/sg2cache");
  env.set("XDG_CACHE_HOME", "/x/xdg");
  env.set("HOME", "/x/home");
  EXPECT_EQ(download_cache_dir(), "/x/sg2cache");
  env.set("SG2_CACHE_DIR", nullptr);
  EXPECT_EQ(download_cache_dir(), "/x/xdg/sg2");
  env.set("XDG_CACHE_HOME", "relative");  // the XDG spec: relative paths are ignored
  EXPECT_EQ(download_cache_dir(), "/x/home/.cache/sg2");
  env.set("HOME", nullptr);
  env.set("XDG_CACHE_HOME", nullptr);
  EXPECT_THROW(download_cache_dir(), Error);

  DownloadOptions o;
  o.cache_dir = "/c/";
  const std::string a = cached_download_path("https://h.org/dir/stylegan2-ffhq-1024x1024.pkl?dl=1#x", o);
  EXPECT_EQ(a.substr(0, 3), "/c/");
  EXPECT_EQ(a.substr(19), "-stylegan2-ffhq-1024x1024.pkl") << a;
  EXPECT_EQ(a.substr(3, 16).find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(cached_download_path("https://other.org/dir/stylegan2-ffhq-1024x1024.pkl", o), a);  // another URL
  EXPECT_EQ(cached_download_path("https://h.org/a%20b/..%2F.hidden", o).substr(19), "-_._2F.hidden");
  EXPECT_EQ(cached_download_path("https://h.org/", o).substr(19), "-download");
  EXPECT_EQ(cached_download_path("https://h.org", o).substr(19), "-download");

  EXPECT_TRUE(is_url("https://h.org/x.pkl"));
  EXPECT_TRUE(is_url("s3://bucket/x.pkl"));
  EXPECT_FALSE(is_url("/data/x.pkl"));
  EXPECT_FALSE(is_url("C:/x.pkl"));
  EXPECT_FALSE(is_url("weird name://x"));
  EXPECT_TRUE(downloads_supported());
}
