// sg2 readers: finding the generator in a checkpoint from its structure (families.h).
//
//  * tuple (G, D, Gs) of `dnnlib.tflib.network.Network`, or one such network   -> TensorFlow (Gs)
//  * dict with `G_ema` (a persistent / module object)                        -> ada or stylegan3 repo
//    (`G_ema` holding a rosinality state dict -> rosinality; an official state dict -> refused)
//  * dict with `g_ema` (a state dict), optionally `latent_avg`                -> rosinality
//  * a bare rosinality generator state dict (`style.1.weight`, `input.input`) -> rosinality
//  * a lone Generator module object                                          -> ada or stylegan3 repo
// Everything else is named in an error: discriminator-only files, G without G_ema, the
// official generator's bare state dict, or a top-level call of anything (`os.system`, ...), which
// sg2 reports and never runs.
#include "readers/families.h"
#include "readers/pickle_access.h"
#include "sg2/error.h"

namespace sg2::readers {

using pickle::Node;

namespace {

bool is_tf_network(const Node* n) { return pickle::is_call(n, "dnnlib.tflib.network.Network"); }

std::string network_name(const Node* n) {
  auto s = pickle::as_str(pickle::attr(n, "name"));
  return s ? pickle::printable(*s) : "?";
}

/// The callable's path for messages, with the os-module alias of posix / nt functions.
std::string callable_for_message(const Node* obj) {
  std::string p = pickle::call_path(obj);
  if (p.empty()) return "a non-global callable";
  std::string shown = pickle::printable(p, 80);
  if (p.rfind("posix.", 0) == 0 || p.rfind("nt.", 0) == 0)
    shown += " (os." + pickle::printable(p.substr(p.find('.') + 1), 40) + ")";
  return shown;
}

bool is_persistent(const Node* n) { return pickle::is_call(n, "torch_utils.persistence._reconstruct_persistent_obj"); }

std::string persistent_class(const Node* n) {
  const auto& a = pickle::call_args(n);
  auto c = a.empty() ? std::nullopt : pickle::as_str(pickle::dict_get(a[0], "class_name"));
  return c ? std::string(*c) : "";
}

/// A state dict (name -> tensor) of the official generator: its tensor names are known, but the
/// module attributes the conversion needs (conv_clamp, fp16 blocks, gains) are not in it.
bool is_official_state_dict(const Node* n) {
  return pickle::dict_get(n, "mapping.fc0.weight") != nullptr || pickle::dict_get(n, "synthesis.b4.const") != nullptr;
}

[[noreturn]] void fail_official_state_dict(const std::string& what, const std::string& where) {
  fail(ErrorKind::unsupported, what, ": unsupported: ", where,
       "a bare state dict of an official generator (its module attributes are missing: conv_clamp, fp16 blocks, "
       "gains); convert the original network pickle instead");
}

Conversion from_tf(Checkpoint& ck, const Node* gs, const std::string& where) {
  const std::string name = network_name(gs);
  auto func = pickle::as_str(pickle::attr(gs, "build_func_name"));
  if (name == "D" || (func && func->rfind("D_", 0) == 0))
    fail(ErrorKind::unsupported, ck.what, ": unsupported: a discriminator-only TensorFlow pickle (network '", name,
         "')");
  return convert_tf_generator(ck, gs, where);
}

}  // namespace

Conversion detect_and_convert(Checkpoint& ck) {
  const Node* root = ck.root;
  const std::string& what = ck.what;
  // TensorFlow: (G, D, Gs) or a single network.
  if (const auto* items = pickle::as_seq(root)) {
    bool all_tf = !items->empty();
    for (const Node* n : *items) all_tf = all_tf && is_tf_network(n);
    if (all_tf && items->size() == 3) return from_tf(ck, (*items)[2], "Gs");
    if (all_tf)
      fail(ErrorKind::unsupported, what, ": unsupported: a tuple of ", items->size(),
           " TensorFlow networks (expected G, D, Gs)");
    fail(ErrorKind::bad_file, what, ": not a recognised checkpoint: the pickle holds a ", pickle::describe(root));
  }
  if (is_tf_network(root)) return from_tf(ck, root, "network '" + network_name(root) + "'");
  if (pickle::is_dict_like(root)) {
    if (const Node* g = pickle::dict_get(root, "G_ema")) {
      if (pickle::is_none(g))
        fail(ErrorKind::unsupported, what,
             ": unsupported: 'G_ema' is None; sg2 runs the EMA generator, never the training copy 'G'");
      if (is_tf_network(g)) return from_tf(ck, g, "G_ema");
      if (pickle::is_dict_like(g)) {  // {'G_ema': G.state_dict()}: tensors without their modules
        if (is_official_state_dict(g)) fail_official_state_dict(what, "'G_ema' is ");
        if (pickle::dict_get(g, "style.1.weight") && pickle::dict_get(g, "input.input"))
          return convert_rosinality(ck, root, g, "G_ema");
        fail(ErrorKind::unsupported, what, ": unsupported: 'G_ema' is a state dict (keys ", pickle::key_list(g),
             "), not a StyleGAN2 generator network");
      }
      return convert_ada_generator(ck, g, "G_ema");
    }
    if (const Node* gs = pickle::dict_get(root, "Gs"); gs && is_tf_network(gs)) return from_tf(ck, gs, "Gs");
    if (const Node* g = pickle::dict_get(root, "g_ema"); g && !pickle::is_none(g)) {
      if (is_official_state_dict(g)) fail_official_state_dict(what, "'g_ema' is ");
      return convert_rosinality(ck, root, g, "g_ema");
    }
    if (pickle::dict_get(root, "style.1.weight") && pickle::dict_get(root, "input.input"))
      return convert_rosinality(ck, nullptr, root, "generator state dict");
    if (is_official_state_dict(root)) fail_official_state_dict(what, "");
    if (pickle::dict_get(root, "G") || pickle::dict_get(root, "g"))
      fail(ErrorKind::unsupported, what,
           ": unsupported: the checkpoint has a training generator ('G'/'g') but no EMA generator "
           "('G_ema'/'g_ema'), which is what sg2 runs (keys ",
           pickle::key_list(root), ")");
    if (pickle::dict_get(root, "D") || pickle::dict_get(root, "d"))
      fail(ErrorKind::unsupported, what, ": unsupported: a discriminator-only checkpoint (keys ",
           pickle::key_list(root), ")");
    fail(ErrorKind::bad_file, what, ": not a recognised checkpoint: a dict with keys ", pickle::key_list(root),
         " (expected G_ema, Gs or g_ema)");
  }
  if (is_persistent(root)) {
    const std::string cls = persistent_class(root);
    if (cls == "Generator") return convert_ada_generator(ck, root, "Generator");
    if (cls.find("Discriminator") != std::string::npos)
      fail(ErrorKind::unsupported, what, ": unsupported: a discriminator-only pickle (", pickle::printable(cls), ")");
    fail(ErrorKind::unsupported, what, ": unsupported: a pickled '", pickle::printable(cls),
         "' network, not a generator");
  }
  if (root != nullptr && root->kind == pickle::Kind::object)
    fail(ErrorKind::bad_file, what, ": not a checkpoint: its top-level value is a call to ", callable_for_message(root),
         ", refused (sg2 never runs code from a pickle; Python would have run it on load)");
  fail(ErrorKind::bad_file, what, ": not a recognised checkpoint: the pickle holds ", pickle::describe(root));
}

}  // namespace sg2::readers
