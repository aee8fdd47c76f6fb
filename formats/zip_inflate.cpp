// sg2 internal: raw DEFLATE with zlib (formats/zip_inflate.h).
#include "formats/zip_inflate.h"

#include <zlib.h>

#include <algorithm>

#include "sg2/error.h"

namespace sg2::detail {

void inflate_raw(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_size, const std::string& what) {
  z_stream s{};
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) fail(ErrorKind::out_of_memory, what, ": cannot start zlib's inflate");
  // zlib counts in uInt: feed and drain in pieces of at most 1 GiB.
  constexpr size_t kPiece = size_t(1) << 30;
  size_t in_left = in_size, out_left = out_size;
  int rc = Z_OK;
  s.next_in = const_cast<Bytef*>(in);
  s.next_out = out;
  while (rc == Z_OK) {
    if (s.avail_in == 0 && in_left > 0) {
      s.avail_in = static_cast<uInt>(std::min(in_left, kPiece));
      in_left -= s.avail_in;
    }
    if (s.avail_out == 0 && out_left > 0) {
      s.avail_out = static_cast<uInt>(std::min(out_left, kPiece));
      out_left -= s.avail_out;
    }
    const uInt before_in = s.avail_in, before_out = s.avail_out;
    rc = inflate(&s, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && s.avail_in == before_in && s.avail_out == before_out) break;  // no progress
    if (rc == Z_BUF_ERROR) rc = Z_OK;
  }
  const uint64_t produced = s.total_out;
  const bool ended = rc == Z_STREAM_END;
  const char* msg = s.msg;
  inflateEnd(&s);
  if (!ended)
    fail(ErrorKind::bad_file, what, ": corrupt compressed data (",
         rc == Z_DATA_ERROR && msg ? msg : (produced >= out_size ? "more data than its size says" : "truncated"), ")");
  if (produced != out_size)
    fail(ErrorKind::bad_file, what, ": the compressed data holds ", produced, " bytes, its header says ", out_size);
}

}  // namespace sg2::detail
