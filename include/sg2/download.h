// sg2: networks by URL (`sg2 generate --network https://...`, the form the official READMEs use),
// downloaded once into a local cache and used from there without the network afterwards.
//
// Cache folder: $SG2_CACHE_DIR, else $XDG_CACHE_HOME/sg2, else $HOME/.cache/sg2. A URL's file is
//     <cache>/<first 16 hex digits of sha256(URL)>-<the URL's last path component, sanitised>
// (e.g. 3f0c...-stylegan2-ffhq-1024x1024.pkl): a different URL never reuses another's file, and the
// name still says what it is. A file found there is used as is, with no network access at all.
// Otherwise libcurl downloads it: http:// and https:// only (also for redirects, at most
// `max_redirects` of them), TLS certificates and host names verified, the body written to a new
// temporary file in the cache folder (created with O_EXCL, removed on SIGINT / SIGTERM /
// SIGHUP: sg2/interrupt.h); only when the transfer ended with exactly the bytes the server
// announced (Content-Length) and the server answered 2xx is it flushed to disk (fsync) and renamed
// into place. Any failure leaves nothing in the cache. A response larger than `max_bytes` is
// stopped (a hostile or wrong server cannot fill the disk). Processes downloading the same URL at
// once (a sharded run) take turns on `<file>.lock` (flock), so the file is downloaded once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

struct DownloadOptions {
  std::string cache_dir;  ///< "" = download_cache_dir()
  /// The largest response accepted, in bytes; 0 = $SG2_DOWNLOAD_MAX_BYTES when set (a decimal
  /// number of bytes), else 8 GiB (the largest official StyleGAN2 pickles are ~380 MB).
  uint64_t max_bytes = 0;
  int max_redirects = 10;
  int connect_timeout_s = 30;  ///< for each connection
  int stall_timeout_s = 60;    ///< stop when no byte arrived for this long
  /// Called from the downloading thread as bytes arrive: (received, total); total is 0 while
  /// unknown (no Content-Length). sg2 never prints; the CLI draws its bar from this.
  std::function<void(uint64_t received, uint64_t total)> progress;
};

/// True when `text` has the form of a URL, `scheme://...` with a scheme of letters, digits, '+',
/// '-' or '.' (any scheme: download_cached refuses those it does not download).
bool is_url(const std::string& text);

/// True when this sg2 was built with downloads (libcurl; CMake option SG2_DOWNLOADS). Without
/// them download_cached still returns a cached file, and refuses to download.
bool downloads_supported();

/// The cache folder (see above); not created. Throws Error(io) when neither SG2_CACHE_DIR,
/// XDG_CACHE_HOME nor HOME is set.
std::string download_cache_dir();

/// Where the file of `url` is (or would be) cached under `options.cache_dir` (see above).
std::string cached_download_path(const std::string& url, const DownloadOptions& options = {});

/// The local path of the file at `url`: the cached file when there is one, else downloaded into
/// the cache first (see above). Sets `*downloaded` (if given) to whether it was downloaded now.
/// Throws Error(invalid_argument) for a URL that is not http(s); Error(io) "cannot download
/// URL: reason" with the URL escaped (and its user:password@ part hidden), when offline (cannot
/// resolve or connect), on an HTTP error status (404), a TLS failure, a transfer that ended
/// early or sent other than the announced bytes, a response over max_bytes, a stall, or when the
/// cache folder cannot be written; Error(unsupported) when it would have to download and this sg2
/// was built without downloads (saying to download the file by hand).
std::string download_cached(const std::string& url, const DownloadOptions& options = {}, bool* downloaded = nullptr);

}  // namespace sg2
SG2_PUBLIC_END
