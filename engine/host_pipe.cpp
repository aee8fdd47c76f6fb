// sg2: the host pipe (backend.h make_host_pipe): synthesis runs synchronously in submit(), then the
// official uint8 conversion on the host. Used by the CPU backend.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/backend.h"
#include "engine/batch_pipe.h"
#include "engine/slot_ring.h"
#include "kernels/ref/box_downscale.h"
#include "sg2/error.h"
#include "sg2/image.h"

namespace sg2 {

namespace {

class HostPipe final : public BatchPipe {
 public:
  HostPipe(Backend& backend, const ModelConfig& cfg, int batch, PipeOutputs out, int slots)
      : backend_(backend), cfg_(cfg), batch_(batch), out_(out), ring_(slots), slots_(static_cast<size_t>(slots)) {}

  int slots() const override { return ring_.size(); }

  int submit(const Tensor& ws, const NoiseSpec& noise) override {
    const int n = static_cast<int>(ws.dim(0));
    if (n < 1 || n > batch_) fail(ErrorKind::internal, "pipe: batch of ", n, " for a pipe of ", batch_);
    const int id = ring_.acquire();
    try {
      Slot& s = slots_[static_cast<size_t>(id)];
      Tensor img = backend_.synthesize(ws, noise, std::string());
      require_finite_images(img, -1, out_.nonfinite_source);
      s.count = n;
      const int C = cfg_.img_channels, H = cfg_.height(), W = cfg_.width();
      const int f = std::max(1, out_.downscale);
      const size_t per = size_t(C) * H * W, per_u8 = size_t(C) * (H / f) * (W / f);
      if (out_.u8) {
        s.u8.resize(size_t(n) * per_u8);
        for (int i = 0; i < n; ++i) {
          const Image8 im = to_image8(img, i);
          if (f == 1)
            std::memcpy(s.u8.data() + size_t(i) * per, im.pixels.data(), per);
          else
            ref::box_downscale_u8(im.pixels.data(), 1, H, W, C, f, s.u8.data() + size_t(i) * per_u8);
        }
      }
      if (out_.img) s.img = std::move(img.vec());
      if (out_.styles) s.styles = std::move(backend_.styles(ws).vec());
      return id;
    } catch (...) {
      ring_.release(id);
      throw;
    }
  }

  HostBatchView wait(int id) override {
    const Slot& s = slots_.at(static_cast<size_t>(id));
    HostBatchView v;
    v.count = s.count;
    v.u8 = out_.u8 ? s.u8.data() : nullptr;
    v.img = out_.img ? s.img.data() : nullptr;
    v.styles = out_.styles ? s.styles.data() : nullptr;
    return v;
  }

  void release(int id) noexcept override { ring_.release(id); }
  void cancel() noexcept override { ring_.cancel(); }
  bool has_free_slot() override { return ring_.any_free(); }

 private:
  struct Slot {
    int count = 0;
    std::vector<uint8_t> u8;
    std::vector<float> img;
    std::vector<float> styles;
  };
  Backend& backend_;
  const ModelConfig& cfg_;
  int batch_;
  PipeOutputs out_;
  SlotRing ring_;
  std::vector<Slot> slots_;
};

}  // namespace

std::unique_ptr<BatchPipe> make_host_pipe(Backend& backend, const ModelConfig& cfg, int batch, PipeOutputs out,
                                          int slots) {
  return std::make_unique<HostPipe>(backend, cfg, batch, out, slots);
}

}  // namespace sg2
