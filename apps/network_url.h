// sg2 CLI: --network URL (sg2/download.h): the cached copy, or a download into the cache with a
// progress bar on stderr.
#pragma once

#include <string>

namespace sg2::cli {

/// The local file for `--network URL`: the cached copy when there is one (no network access), else
/// downloaded first. On a terminal a bar appears once the download has taken ~0.5 s (at most 10
/// redraws a second); elsewhere a plain line at most every 10 s. Unless `quiet`, a finished
/// download is reported in one line ("sg2 COMMAND: note: downloaded ..."). Throws what
/// sg2::download_cached throws.
std::string network_url_path(const std::string& url, const std::string& command, bool quiet);

}  // namespace sg2::cli
