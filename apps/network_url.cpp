// sg2 CLI: --network URL (network_url.h).
#include "network_url.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "sg2/download.h"
#include "sg2/text.h"

namespace sg2::cli {

namespace {

std::string megabytes(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", double(n) / 1e6);
  return buf;
}

/// The bar of one download (the downloading thread calls update()).
class DownloadBar {
 public:
  DownloadBar(std::string label, bool quiet) : label_(std::move(label)), quiet_(quiet), tty_(::isatty(2) == 1) {
    start_ = last_ = std::chrono::steady_clock::now();
  }
  void update(uint64_t received, uint64_t total) {
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_start = std::chrono::duration<double>(now - start_).count();
    const double since_draw = std::chrono::duration<double>(now - last_).count();
    if (tty_ ? since_start >= 0.5 && (since_draw >= 0.1 || !drawn_) : since_draw >= 10.0) draw(received, total, now);
  }
  void finish() {
    if (drawn_ && tty_) std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
  }

 private:
  void draw(uint64_t received, uint64_t total, std::chrono::steady_clock::time_point now) {
    last_ = now;
    drawn_ = true;
    const double t = std::chrono::duration<double>(now - start_).count();
    const double rate = t > 0 ? double(received) / t / 1e6 : 0;
    char tail[96];
    if (total > 0)
      std::snprintf(tail, sizeof tail, " %s/%s MB  %.1f MB/s", megabytes(received).c_str(), megabytes(total).c_str(),
                    rate);
    else
      std::snprintf(tail, sizeof tail, " %s MB  %.1f MB/s", megabytes(received).c_str(), rate);
    if (tty_) {
      const int width = 30;
      const int filled = total > 0 ? static_cast<int>(double(received) / double(total) * width) : 0;
      const std::string bar =
          total > 0 ? " [" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), ' ') + "]" : "";
      std::fputs(("\r" + label_ + bar + tail + "\x1b[K").c_str(), stderr);
    } else {
      std::fprintf(stderr, "%s:%s\n", label_.c_str(), tail);
    }
    std::fflush(stderr);
  }

  std::string label_;
  bool quiet_, tty_, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace

std::string network_url_path(const std::string& url, const std::string& command, bool quiet) {
  DownloadOptions options;
  DownloadBar bar("sg2 " + command + ": downloading", quiet);
  options.progress = [&bar](uint64_t received, uint64_t total) { bar.update(received, total); };
  bool downloaded = false;
  std::string path;
  try {
    path = download_cached(url, options, &downloaded);
  } catch (...) {
    bar.finish();
    throw;
  }
  bar.finish();
  if (downloaded && !quiet)
    std::cerr << "sg2 " << command << ": note: downloaded " << printable(url, 200) << " into " << printable(path, 200)
              << "; later runs use this copy\n";
  return path;
}

}  // namespace sg2::cli
