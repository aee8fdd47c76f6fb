// sg2: the style layout (sg2/styles.h), from the synthesis plan both backends walk.
#include "sg2/styles.h"

#include "engine/plan.h"

namespace sg2 {

std::vector<StyleLayer> style_layers(const ModelConfig& config) {
  const SynthesisPlan plan = make_synthesis_plan(config);
  std::vector<StyleLayer> out;
  int64_t offset = 0;
  auto add = [&](const LayerPlan& l) {
    StyleLayer s;
    const std::string prefix = "synthesis.";
    s.name = l.name.compare(0, prefix.size(), prefix) == 0 ? l.name.substr(prefix.size()) : l.name;
    s.offset = offset;
    s.dims = l.in_channels;
    s.w_index = l.w_index;
    offset += l.in_channels;
    out.push_back(std::move(s));
  };
  for (const BlockPlan& b : plan.blocks) {
    if (b.conv0) add(*b.conv0);
    add(b.conv1);
    if (b.torgb) add(*b.torgb);
  }
  return out;
}

int64_t style_dims(const ModelConfig& config) {
  int64_t n = 0;
  for (const StyleLayer& l : style_layers(config)) n += l.dims;
  return n;
}

}  // namespace sg2
