// sg2: networks by URL, downloaded into a cache with libcurl (sg2/download.h).
#include "sg2/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sg2/error.h"
#include "sg2/model.h"
#include "util/file_util.h"
#include "util/text_util.h"

#ifdef SG2_WITH_CURL
#include <curl/curl.h>

#include <mutex>
#endif

namespace sg2 {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The scheme of a URL ("https"), lowercased; "" when `text` is not scheme://...
std::string scheme_of(const std::string& text) {
  const size_t colon = text.find("://");
  if (colon == std::string::npos || colon == 0) return "";
  if (!std::isalpha(static_cast<unsigned char>(text[0]))) return "";
  for (size_t i = 0; i < colon; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return "";
  }
  return lower(text.substr(0, colon));
}

/// The URL for messages: escaped, with a user:password@ part hidden.
std::string shown_url(const std::string& url) {
  std::string u = url;
  const size_t start = u.find("://");
  if (start != std::string::npos) {
    const size_t host_end = u.find_first_of("/?#", start + 3);
    const size_t at = u.rfind('@', host_end == std::string::npos ? std::string::npos : host_end);
    if (at != std::string::npos && at > start) u.replace(start + 3, at - (start + 3), "***");
  }
  return detail::printable(u, 200);
}

/// The last path component of the URL, reduced to [A-Za-z0-9._-] (others become '_'), at most 100
/// characters, never starting with '.'; "download" when there is none.
std::string url_file_name(const std::string& url) {
  std::string rest = url.substr(url.find("://") + 3);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string name = path.substr(path.rfind('/') + 1);
  if (name.size() > 100) name = name.substr(name.size() - 100);
  for (char& c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '.' && c != '-' && c != '_') c = '_';
  }
  if (!name.empty() && name[0] == '.') name[0] = '_';
  return name.empty() ? "download" : name;
}

bool regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

#ifdef SG2_WITH_CURL

constexpr uint64_t kDefaultMaxBytes = 8ull << 30;

uint64_t max_bytes_of(const DownloadOptions& o) {
  if (o.max_bytes > 0) return o.max_bytes;
  const char* env = std::getenv("SG2_DOWNLOAD_MAX_BYTES");
  if (env == nullptr || *env == '\0') return kDefaultMaxBytes;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || v == 0 || !std::isdigit(static_cast<unsigned char>(env[0])))
    fail(ErrorKind::invalid_argument, "SG2_DOWNLOAD_MAX_BYTES: expected a positive number of bytes, got '",
         detail::printable(env, 40), "'");
  return v;
}

std::string bytes_text(uint64_t n) {
  return n >= (1u << 20) ? std::to_string(n) + " bytes (" + std::to_string(n >> 20) + " MiB)"
                         : std::to_string(n) + " bytes";
}

struct Transfer {
  CURL* curl = nullptr;
  std::FILE* file = nullptr;
  uint64_t received = 0, limit = 0;
  bool too_large = false, write_failed = false;
  int write_errno = 0;
  const DownloadOptions* options = nullptr;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (n > t->limit - t->received) {
    t->too_large = true;
    return 0;  // stops the transfer (CURLE_WRITE_ERROR)
  }
  if (n > 0 && std::fwrite(data, 1, n, t->file) != n) {
    t->write_failed = true;
    t->write_errno = errno;
    return 0;
  }
  t->received += n;
  return n;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->options->progress)
    t->options->progress(now > 0 ? static_cast<uint64_t>(now) : 0, total > 0 ? static_cast<uint64_t>(total) : 0);
  return 0;
}

void curl_setup_once() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (rc != CURLE_OK) fail(ErrorKind::internal, "libcurl could not be initialised: ", curl_easy_strerror(rc));
}

/// Why the transfer failed, in a user's words.
std::string failure_reason(CURLcode rc, const Transfer& t, const char* errbuf, uint64_t limit) {
  long status = 0;
  curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t announced = -1;
  curl_easy_getinfo(t.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
  const std::string detail = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  if (t.too_large || rc == CURLE_FILESIZE_EXCEEDED)
    return "the response is larger than the limit of " + bytes_text(limit) +
           (announced > 0 ? " (the server announced " + bytes_text(static_cast<uint64_t>(announced)) + ")" : "") +
           "; SG2_DOWNLOAD_MAX_BYTES raises the limit";
  if (t.write_failed) return std::string("cannot write into the cache folder: ") + std::strerror(t.write_errno);
  switch (rc) {
    case CURLE_HTTP_RETURNED_ERROR:
      return "the server answered HTTP " + std::to_string(status) + (status == 404 ? " (not found)" : "");
    case CURLE_PARTIAL_FILE:
      return "the connection closed after " + std::to_string(t.received) + " bytes" +
             (announced > 0 ? " of the " + std::to_string(announced) + " announced" : "");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return "cannot resolve the host name (offline?): " + detail;
    case CURLE_COULDNT_CONNECT:
      return "cannot connect (offline, or the server is down?): " + detail;
    case CURLE_OPERATION_TIMEDOUT:
      return "timed out (a slow or stalled connection): " + detail;
    case CURLE_TOO_MANY_REDIRECTS:
      return "too many redirects: " + detail;
    case CURLE_UNSUPPORTED_PROTOCOL:
      return "a redirect to a URL that is not http(s) is refused: " + detail;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
      return "TLS failed (the certificate or host name did not verify): " + detail;
    default:
      return detail;
  }
}

/// Downloads `url` onto `path` through a temporary file beside it.
void fetch(const std::string& url, const std::string& path, const DownloadOptions& options) {
  curl_setup_once();
  const uint64_t limit = max_bytes_of(options);
  const std::string shown = shown_url(url);
  detail::TempFile tmp(path);  // new (O_EXCL), removed on any failure and on an interrupt
  Transfer t;
  t.file = tmp.file();
  t.limit = limit;
  t.options = &options;
  t.curl = curl_easy_init();
  if (t.curl == nullptr) fail(ErrorKind::out_of_memory, "cannot download ", shown, ": libcurl could not start");
  struct Cleanup {
    CURL* c;
    ~Cleanup() { curl_easy_cleanup(c); }
  } cleanup{t.curl};
  char errbuf[CURL_ERROR_SIZE] = "";
  CURL* c = t.curl;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string forms
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, static_cast<long>(options.max_redirects));
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout_s));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.stall_timeout_s));
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limit));
  curl_easy_setopt(c, CURLOPT_USERAGENT, (std::string("sg2/") + version()).c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, options.progress ? 0L : 1L);
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) fail(ErrorKind::io, "cannot download ", shown, ": ", failure_reason(rc, t, errbuf, limit));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_off_t announced = -1;
  curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
  if (status < 200 || status > 299)
    fail(ErrorKind::io, "cannot download ", shown, ": the server answered HTTP ", status, ", not a file");
  if (announced >= 0 && static_cast<uint64_t>(announced) != t.received)
    fail(ErrorKind::io, "cannot download ", shown, ": received ", t.received, " bytes, but the server announced ",
         announced);
  if (t.received == 0) fail(ErrorKind::io, "cannot download ", shown, ": the server sent an empty file");
  if (std::fflush(t.file) != 0 || ::fsync(::fileno(t.file)) != 0)
    fail(ErrorKind::io, "cannot download ", shown, ": cannot write ", tmp.temp_path(), ": ", std::strerror(errno));
  tmp.commit();  // renamed into place: from here on the cache holds the whole file
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  if (const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);  // the rename itself, on disk
    ::close(fd);
  }
}

/// An exclusive lock on `<path>.lock` while one process downloads `path`, so that the processes of a
/// sharded run (srun / mpirun, each with the same --network URL) download it once: the others wait
/// and then find the file. The lock file is removed afterwards; a process that locked a file just
/// removed may download in parallel, which stays correct (each renames a whole file into place).
class DownloadLock {
 public:
  explicit DownloadLock(std::string path) : path_(std::move(path) + ".lock") {
    slot_ = detail::register_temp(path_);  // an interrupt removes it too
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    detail::temp_created(slot_);
    if (fd_ < 0) return;  // no lock (a read-only folder fails later, with its reason)
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~DownloadLock() {
    if (fd_ >= 0) {
      ::unlink(path_.c_str());
      ::close(fd_);
    }
    detail::unregister_temp(slot_);
  }
  DownloadLock(const DownloadLock&) = delete;
  DownloadLock& operator=(const DownloadLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
  int slot_ = -1;
};

#endif  // SG2_WITH_CURL

}  // namespace

bool is_url(const std::string& text) { return !scheme_of(text).empty(); }

bool downloads_supported() {
#ifdef SG2_WITH_CURL
  return true;
#else
  return false;
#endif
}

std::string download_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  if (std::string d = env("SG2_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty() && d[0] == '/') return d + "/sg2";
  if (std::string h = env("HOME"); !h.empty()) return h + "/.cache/sg2";
  fail(ErrorKind::io, "no folder for downloads: set SG2_CACHE_DIR (or XDG_CACHE_HOME, or HOME)");
}

std::string cached_download_path(const std::string& url, const DownloadOptions& options) {
  std::string dir = options.cache_dir.empty() ? download_cache_dir() : options.cache_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string hash = detail::sha256_hex(reinterpret_cast<const uint8_t*>(url.data()), url.size());
  return dir + "/" + hash.substr(0, 16) + "-" + url_file_name(url);
}

std::string download_cached(const std::string& url, const DownloadOptions& options, bool* downloaded) {
  if (downloaded != nullptr) *downloaded = false;
  const std::string scheme = scheme_of(url);
  if (scheme != "http" && scheme != "https")
    fail(ErrorKind::invalid_argument, shown_url(url), ": only http:// and https:// URLs are downloaded",
         scheme.empty() ? std::string() : " (not " + detail::printable(scheme, 20) + "://)");
  const std::string path = cached_download_path(url, options);
  if (regular_file(path)) return path;  // complete: files get there only by rename
#ifdef SG2_WITH_CURL
  detail::make_dirs(path.substr(0, path.rfind('/')));
  DownloadLock lock(path);
  if (regular_file(path)) return path;  // another process downloaded it meanwhile
  fetch(url, path, options);
  if (downloaded != nullptr) *downloaded = true;
  return path;
#else
  fail_hint(ErrorKind::unsupported,
            "download the file yourself (curl -LO URL) and pass its path, or save it as " +
                detail::printable(path, 200) + " to have sg2 use it for this URL",
            "cannot download ", shown_url(url),
            ": this sg2 was built without downloads (CMake option SG2_DOWNLOADS=OFF: libcurl's development files "
            "were missing)");
#endif
}

}  // namespace sg2
