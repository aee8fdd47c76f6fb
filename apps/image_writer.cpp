// sg2 CLI: the image writers (image_writer.h).
#include "image_writer.h"

#include <chrono>
#include <map>
#include <mutex>

#include "sg2/error.h"
#include "sg2/files.h"
#include "sg2/npy.h"
#include "task_pool.h"

namespace sg2::cli {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Adds seconds from several threads.
struct Seconds {
  std::atomic<int64_t> ns{0};
  void add(double s) { ns.fetch_add(static_cast<int64_t>(s * 1e9)); }
  double get() const { return double(ns.load()) * 1e-9; }
};

/// Dataset archive entries in index order: encoders finish out of order, the archive lists its
/// images sorted (as dataset_tool.py writes them).
class OrderedZip {
 public:
  OrderedZip(DatasetZip& zip, int64_t first) : zip_(zip), first_(first) {}
  /// Adds image `index`'s PNG once every earlier one is in; returns the bytes written now.
  int64_t add(int64_t index, std::vector<uint8_t> png) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.emplace(index, std::move(png));
    int64_t bytes = 0;
    for (auto it = waiting_.begin(); it != waiting_.end() && it->first == next_; it = waiting_.erase(it), ++next_) {
      zip_.add(dataset_image_name(uint64_t(first_ + it->first)), it->second);
      bytes += int64_t(it->second.size());
    }
    return bytes;
  }

 private:
  DatasetZip& zip_;
  int64_t first_;
  std::mutex mu_;
  std::map<int64_t, std::vector<uint8_t>> waiting_;
  int64_t next_ = 0;
};

}  // namespace

WriteStats write_images(const std::vector<Generator*>& gens, const ImageJob& job, const StreamOptions& stream,
                        const ImageOutputs& out, const std::function<void(int64_t)>& progress,
                        std::atomic<int64_t>& files) {
  const Clock::time_point start = Clock::now();
  WriteStats st;
  Seconds encode_s, write_s;
  std::atomic<int64_t> images{0}, bytes{0};
  std::unique_ptr<OrderedZip> zip;
  if (out.zip) zip = std::make_unique<OrderedZip>(*out.zip, out.zip_first);
  const ModelConfig& cfg = gens.at(0)->config();
  const int H = cfg.height(), W = cfg.width(), C = cfg.img_channels;
  const size_t ws_floats = size_t(cfg.num_ws) * cfg.w_dim;
  const OutputFormat fmt = out.format;
  auto write = [&](const std::string& path, const std::vector<uint8_t>& data) {
    const Clock::time_point t = Clock::now();
    write_file_atomically(path, data.data(), data.size());
    write_s.add(since(t));
    bytes.fetch_add(int64_t(data.size()));
    files.fetch_add(1);
  };
  {
    TaskPool pool(out.jobs, size_t(2) * out.jobs);
    st.stream = generate_stream(gens, job, stream, [&](const StreamImage& im) {
      if (out.on_image) out.on_image(im);
      if (out.grid) out.grid->add(im.image8());
      const std::string stem = out.stem(im);
      pool.submit([&, im, stem] {
        if (fmt == OutputFormat::png || fmt == OutputFormat::both) {
          Clock::time_point t = Clock::now();
          std::vector<uint8_t> png = encode_png(im.u8, im.width, im.height, C, out.png);
          encode_s.add(since(t));
          if (zip) {
            t = Clock::now();
            bytes.fetch_add(zip->add(im.index, std::move(png)));
            write_s.add(since(t));
          } else {
            write(out.dir->file(stem + ".png"), png);
          }
        }
        if (fmt == OutputFormat::u8npy) {
          const Clock::time_point t = Clock::now();
          write_npy_u8(out.dir->file(stem + ".npy"), im.u8, {1, im.height, im.width, C});
          write_s.add(since(t));
          bytes.fetch_add(int64_t(im.height) * im.width * C + 128);
          files.fetch_add(1);
        }
        if (fmt == OutputFormat::npy || fmt == OutputFormat::both) {
          const Clock::time_point t = Clock::now();
          write_npy(out.dir->file(stem + ".npy"),
                    Tensor({1, C, H, W}, std::vector<float>(im.img, im.img + size_t(C) * H * W)));
          write_s.add(since(t));
          bytes.fetch_add(int64_t(H) * W * C * 4 + 128);
          files.fetch_add(1);
        }
        if (out.save_ws) {
          write_npy(out.dir->file(stem + "_ws.npy"),
                    Tensor({1, cfg.num_ws, cfg.w_dim}, std::vector<float>(im.ws, im.ws + ws_floats)));
          files.fetch_add(1);
        }
        images.fetch_add(1);
      });
      if (progress) progress(images.load());
    });
    pool.finish();
    st.encode_s = encode_s.get();
    st.write_s = write_s.get();
  }
  st.images = images.load();
  st.files = files.load();
  st.bytes = bytes.load();
  st.wall_s = since(start);
  return st;
}

}  // namespace sg2::cli
