// sg2: the host pipe (backend.h make_host_pipe): synthesis runs synchronously in submit(), then the
// official uint8 conversion on the host. Used by the CPU backend.
#include <cstring>
#include <vector>

#include "engine/backend.h"
#include "engine/batch_pipe.h"
#include "engine/slot_ring.h"
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
      const size_t per = size_t(cfg_.img_channels) * cfg_.height() * cfg_.width();
      if (out_.u8) {
        s.u8.resize(size_t(n) * per);
        for (int i = 0; i < n; ++i) {
          const Image8 im = to_image8(img, i);
          std::memcpy(s.u8.data() + size_t(i) * per, im.pixels.data(), per);
        }
      }
      if (out_.img) s.img = std::move(img.vec());
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
