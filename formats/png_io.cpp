// sg2: PNG reading (PngReader, read_png) and streamed grid writing (GridPngWriter) with libpng
// (libpng-dev). image.h documents the behaviour.
//
// libpng reports errors by longjmp to a setjmp point. A longjmp must not cross a C++ frame that
// owns anything, so every libpng call happens inside one of the small `*_step` functions below,
// which hold plain pointers and integers only, set the jump point, and return false when libpng
// failed (the message is copied into the state by png_error_to_state). Their callers, ordinary
// C++, then throw sg2::Error.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <string_view>

#include "sg2/error.h"
#include "sg2/image.h"
#include "util/file_util.h"

namespace sg2 {

namespace {

/// What the libpng callbacks need: the error message, and the bytes being read.
struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  char message[200] = {0};
  const uint8_t* data = nullptr;  // reading: the mapped file
  size_t size = 0;
  size_t pos = 0;
};

void png_error_to_state(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

void png_warning_ignored(png_structp, png_const_charp) {}

/// Reading: libpng reports some damage of the image data as a warning only (a "benign error"): the
/// zlib stream holding more rows than the image ("IDAT: Too much image data"), bytes after the
/// zlib stream in the IDAT chunks ("IDAT: Extra compressed data"), a zlib error met after the last
/// row. Here those are errors: a file whose image data is not exactly the image is refused, never
/// decoded or compared as if it were whole. Other warnings (about ancillary chunks, which are not
/// the image) are ignored.
void png_read_warning(png_structp png, png_const_charp msg) {
  if (msg == nullptr) return;
  const std::string_view m(msg);
  if (m.find("IDAT") == std::string_view::npos && m.find("image data") == std::string_view::npos &&
      m.find("compressed data") == std::string_view::npos)
    return;
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s (the image data is not exactly the image: a damaged file)", msg);
  png_longjmp(png, 1);  // to the step's setjmp, as png_error_to_state
}

void png_read_from_state(png_structp png, png_bytep out, size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->size - s->pos) png_error(png, "the file ends inside a chunk (truncated)");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

// --- the setjmp-protected steps (no C++ objects with destructors in these frames) -------------

bool read_header_step(PngState* s) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_set_read_fn(s->png, s, png_read_from_state);
  // Every chunk's CRC is checked, ancillary ones included (an error, never a warning).
  png_set_crc_action(s->png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  // Unknown chunks and text / profile chunks are skipped unread (still CRC-checked): nothing
  // but the image is decompressed.
  png_set_keep_unknown_chunks(s->png, PNG_HANDLE_CHUNK_NEVER, nullptr, 0);
  static const png_byte skipped[] = "iCCP\0zTXt\0iTXt\0tEXt\0sPLT\0eXIf";
  png_set_keep_unknown_chunks(s->png, PNG_HANDLE_CHUNK_NEVER, skipped, 6);
  png_set_user_limits(s->png, static_cast<png_uint_32>(kMaxPngSide), static_cast<png_uint_32>(kMaxPngSide));
  png_read_info(s->png, s->info);
  return true;
}

/// Sets the transformations (see image.h) and returns the number of interlace passes (0 on error).
int read_transforms_step(PngState* s, int color, int depth, bool trns) {
  if (setjmp(png_jmpbuf(s->png))) return 0;
  if (color == PNG_COLOR_TYPE_PALETTE) {
    png_set_packing(s->png);  // one index per byte; the indices are checked and expanded by the caller
  } else {
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(s->png);
    if (trns) png_set_tRNS_to_alpha(s->png);
  }
  const int passes = png_set_interlace_handling(s->png);
  png_read_update_info(s->png, s->info);
  return passes;
}

bool read_row_step(PngState* s, png_bytep row) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_read_row(s->png, row, nullptr);
  return true;
}

bool read_image_step(PngState* s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_read_image(s->png, rows);
  return true;
}

bool read_end_step(PngState* s) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_read_end(s->png, nullptr);
  return true;
}

bool write_header_step(PngState* s, std::FILE* f, png_uint_32 w, png_uint_32 h, int color) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_init_io(s->png, f);
  png_set_IHDR(s->png, s->info, w, h, 8, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(s->png, s->info);
  return true;
}

bool write_row_step(PngState* s, png_const_bytep row) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_write_row(s->png, row);
  return true;
}

bool write_end_step(PngState* s) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_write_end(s->png, nullptr);
  return true;
}

}  // namespace

// --- PngReader -----------------------------------------------------------------------------

struct PngReader::Impl {
  std::string path;
  detail::MappedFile file;
  PngState s;
  int width = 0, height = 0, channels = 0, bits = 8;
  int color = 0;
  int palette_size = 0;
  png_colorp palette = nullptr;
  png_bytep palette_alpha = nullptr;
  int palette_alpha_size = 0;
  size_t rowbytes = 0;
  int next = 0;              // the next row to return
  bool whole = false;        // interlaced: the image is decoded at once into `image`
  std::vector<uint8_t> raw;  // one row as libpng gives it (or the whole interlaced image)
  std::vector<uint16_t> row;

  explicit Impl(const std::string& p) : path(p), file(p) {}
  ~Impl() {
    if (s.png != nullptr) png_destroy_read_struct(&s.png, s.info ? &s.info : nullptr, nullptr);
  }
  [[noreturn]] void broken(const char* what) const {
    fail(ErrorKind::bad_file, path, ": corrupt or unreadable PNG (", what,
         "): ", s.message[0] ? s.message : "libpng error");
  }
};

PngReader::PngReader(const std::string& path, int64_t max_pixels) : impl_(std::make_unique<Impl>(path)) {
  Impl& m = *impl_;
  if (m.file.size() < 8 || png_sig_cmp(m.file.data(), 0, 8) != 0) fail(ErrorKind::bad_file, path, ": not a PNG file");
  m.s.data = m.file.data();
  m.s.size = m.file.size();
  m.s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &m.s, png_error_to_state, png_read_warning);
  if (m.s.png == nullptr) fail(ErrorKind::out_of_memory, path, ": cannot start libpng");
  m.s.info = png_create_info_struct(m.s.png);
  if (m.s.info == nullptr) fail(ErrorKind::out_of_memory, path, ": cannot start libpng");
  if (!read_header_step(&m.s)) m.broken("header");
  png_uint_32 w = 0, h = 0;
  int depth = 0, interlace = 0;
  png_get_IHDR(m.s.png, m.s.info, &w, &h, &depth, &m.color, &interlace, nullptr, nullptr);
  if (int64_t(w) * int64_t(h) > max_pixels)
    fail(ErrorKind::bad_file, path, ": the image is ", w, "x", h, " (", int64_t(w) * int64_t(h),
         " pixels), more than the limit of ", max_pixels, " pixels");
  const bool trns = png_get_valid(m.s.png, m.s.info, PNG_INFO_tRNS) != 0;
  if (m.color == PNG_COLOR_TYPE_PALETTE) {
    if (png_get_PLTE(m.s.png, m.s.info, &m.palette, &m.palette_size) == 0 || m.palette_size < 1)
      fail(ErrorKind::bad_file, path, ": a palette image without a palette (PLTE chunk)");
    if (trns) png_get_tRNS(m.s.png, m.s.info, &m.palette_alpha, &m.palette_alpha_size, nullptr);
  }
  const int passes = read_transforms_step(&m.s, m.color, depth, trns);
  if (passes == 0) m.broken("header");
  m.width = static_cast<int>(w);
  m.height = static_cast<int>(h);
  m.rowbytes = png_get_rowbytes(m.s.png, m.s.info);
  if (m.color == PNG_COLOR_TYPE_PALETTE) {
    m.channels = trns ? 4 : 3;
    m.bits = 8;
  } else {
    m.channels = png_get_channels(m.s.png, m.s.info);
    m.bits = png_get_bit_depth(m.s.png, m.s.info) == 16 ? 16 : 8;
  }
  m.whole = passes > 1;
  m.row.resize(size_t(m.width) * size_t(m.channels));
  if (!m.whole) m.raw.resize(m.rowbytes);
  // (interlaced: the whole image is decoded at the first next_row(), within the pixel limit)
}

PngReader::~PngReader() = default;
int PngReader::width() const { return impl_->width; }
int PngReader::height() const { return impl_->height; }
int PngReader::channels() const { return impl_->channels; }
int PngReader::bits() const { return impl_->bits; }

const std::vector<uint16_t>& PngReader::next_row() {
  Impl& m = *impl_;
  if (m.next >= m.height) fail(ErrorKind::invalid_argument, m.path, ": all ", m.height, " rows were read");
  const uint8_t* src = nullptr;
  if (m.whole) {
    if (m.raw.empty()) {  // interlaced: all passes into the whole image
      m.raw.resize(m.rowbytes * size_t(m.height));
      std::vector<png_bytep> rows(static_cast<size_t>(m.height));
      for (int y = 0; y < m.height; ++y) rows[size_t(y)] = m.raw.data() + m.rowbytes * size_t(y);
      if (!read_image_step(&m.s, rows.data())) m.broken("image data");
    }
    src = m.raw.data() + m.rowbytes * size_t(m.next);
  } else {
    if (!read_row_step(&m.s, m.raw.data())) m.broken(detail::concat("row ", m.next).c_str());
    src = m.raw.data();
  }
  const size_t n = m.row.size();
  if (m.color == PNG_COLOR_TYPE_PALETTE) {
    for (int x = 0; x < m.width; ++x) {
      const int index = src[x];
      if (index >= m.palette_size)
        fail(ErrorKind::bad_file, m.path, ": palette index ", index, " at pixel (", x, ", ", m.next, ") is beyond its ",
             m.palette_size, "-entry palette");
      uint16_t* px = m.row.data() + size_t(x) * size_t(m.channels);
      px[0] = m.palette[index].red;
      px[1] = m.palette[index].green;
      px[2] = m.palette[index].blue;
      if (m.channels == 4) px[3] = index < m.palette_alpha_size ? m.palette_alpha[index] : 255;
    }
  } else if (m.bits == 16) {
    for (size_t i = 0; i < n; ++i) m.row[i] = static_cast<uint16_t>((src[2 * i] << 8) | src[2 * i + 1]);
  } else {
    for (size_t i = 0; i < n; ++i) m.row[i] = src[i];
  }
  ++m.next;
  return m.row;
}

void PngReader::finish() {
  Impl& m = *impl_;
  while (m.next < m.height) next_row();
  if (!read_end_step(&m.s)) m.broken("after the image data");
}

Image8 read_png(const std::string& path) {
  PngReader r(path);
  Image8 out;
  out.width = r.width();
  out.height = r.height();
  out.channels = r.channels();
  out.pixels.resize(size_t(out.width) * size_t(out.height) * size_t(out.channels));
  const int shift = r.bits() == 16 ? 8 : 0;
  uint8_t* dst = out.pixels.data();
  for (int y = 0; y < out.height; ++y)
    for (uint16_t v : r.next_row()) *dst++ = static_cast<uint8_t>(v >> shift);
  r.finish();
  return out;
}

// --- GridPngWriter -------------------------------------------------------------------------

struct GridPngWriter::Impl {
  detail::TempFile tmp;
  PngState s;
  int cols, rows, cell_w, cell_h, channels;
  std::vector<Image8> pending;  // the current row of cells
  int added = 0, cell_rows_done = 0;
  std::vector<uint8_t> line;  // one pixel row of the grid
  bool finished = false;

  Impl(const std::string& path, int c, int r, int w, int h, int ch)
      : tmp(path), cols(c), rows(r), cell_w(w), cell_h(h), channels(ch) {}
  ~Impl() {
    if (s.png != nullptr) png_destroy_write_struct(&s.png, s.info ? &s.info : nullptr);
  }
  [[noreturn]] void broken() const {
    fail(ErrorKind::io, tmp.path(), ": PNG encoding failed: ", s.message[0] ? s.message : "libpng error");
  }
  /// Writes the pending row of cells (missing cells black) as cell_h pixel rows.
  void write_cell_row() {
    const size_t cell_bytes = size_t(cell_w) * size_t(channels);
    for (int y = 0; y < cell_h; ++y) {
      std::fill(line.begin(), line.end(), 0);
      for (size_t k = 0; k < pending.size(); ++k)
        std::memcpy(line.data() + k * cell_bytes, pending[k].pixels.data() + size_t(y) * cell_bytes, cell_bytes);
      if (!write_row_step(&s, line.data())) broken();
    }
    pending.clear();
    ++cell_rows_done;
  }
};

GridPngWriter::GridPngWriter(const std::string& path, int cols, int rows, int cell_width, int cell_height,
                             int channels) {
  if (cols < 1 || rows < 1) fail(ErrorKind::invalid_argument, path, ": a ", cols, "x", rows, " grid");
  check_png_size(int64_t(cols) * cell_width, int64_t(rows) * cell_height, channels, PngWrite::streamed,
                 detail::concat(path, ": a ", cols, "x", rows, " grid of ", cell_width, "x", cell_height, " images"));
  impl_ = std::make_unique<Impl>(path, cols, rows, cell_width, cell_height, channels);
  Impl& m = *impl_;
  m.line.resize(size_t(cols) * size_t(cell_width) * size_t(channels));
  m.s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &m.s, png_error_to_state, png_warning_ignored);
  if (m.s.png == nullptr) fail(ErrorKind::out_of_memory, path, ": cannot start libpng");
  m.s.info = png_create_info_struct(m.s.png);
  if (m.s.info == nullptr) fail(ErrorKind::out_of_memory, path, ": cannot start libpng");
  static const int kColor[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA};
  if (!write_header_step(&m.s, m.tmp.file(), static_cast<png_uint_32>(int64_t(cols) * cell_width),
                         static_cast<png_uint_32>(int64_t(rows) * cell_height), kColor[channels - 1]))
    m.broken();
}

GridPngWriter::~GridPngWriter() = default;  // an unfinished TempFile is removed

void GridPngWriter::add(const Image8& cell) {
  Impl& m = *impl_;
  if (m.finished) fail(ErrorKind::invalid_argument, m.tmp.path(), ": the grid is finished");
  if (cell.width != m.cell_w || cell.height != m.cell_h || cell.channels != m.channels ||
      cell.pixels.size() != size_t(m.cell_w) * size_t(m.cell_h) * size_t(m.channels))
    fail(ErrorKind::invalid_argument, m.tmp.path(), ": a ", cell.width, "x", cell.height, "x", cell.channels,
         " cell in a grid of ", m.cell_w, "x", m.cell_h, "x", m.channels, " cells");
  if (m.added >= m.cols * m.rows)
    fail(ErrorKind::invalid_argument, m.tmp.path(), ": more than ", m.cols * m.rows, " cells");
  m.pending.push_back(cell);
  ++m.added;
  if (int(m.pending.size()) == m.cols) m.write_cell_row();
}

void GridPngWriter::finish() {
  Impl& m = *impl_;
  if (m.finished) return;
  if (!m.pending.empty()) m.write_cell_row();
  while (m.cell_rows_done < m.rows) m.write_cell_row();  // empty rows of cells: black
  if (!write_end_step(&m.s)) m.broken();
  m.finished = true;
  m.tmp.commit();
}

}  // namespace sg2
