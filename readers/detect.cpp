// sg2 readers: finding the generator in a checkpoint from its structure (families.h).
//
//  * tuple (G, D, Gs) of `dnnlib.tflib.network.Network`, or one such network   -> TensorFlow (Gs)
//  * dict with `G_ema` (a persistent / module object)                        -> ada or stylegan3 repo
//    (`G_ema` holding a rosinality state dict -> rosinality; an official state dict -> refused)
//  * dict with `g_ema` (a state dict), optionally `latent_avg`                -> rosinality
//  * a bare rosinality generator state dict (`style.1.weight`, `input.input`) -> rosinality
//  * a lone Generator module object                                          -> ada or stylegan3 repo
// A state dict whose keys all start with one prefix (`module.` of DataParallel, `generator.`, ...)
// is read without it when the rest is a generator sg2 reads (a note names the prefix); otherwise the
// error names the prefix.
// Everything else is named in an error: discriminator-only files, G without G_ema, the official
// generator's bare state dict, a whole torch.nn.Module pickled by torch.save(model) (its class would
// have to run), or a top-level call of anything (`os.system`, ...), which sg2 reports and never runs.
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

/// torch.save(g_ema) instead of torch.save(g_ema.state_dict()): the value is an nn.Module instance
/// whose class (`cls`) Python would import and run to load it. `key`: the dict key it sits under ("" at
/// the top level).
[[noreturn]] void fail_pickled_module(const std::string& what, const std::string& cls, const std::string& key) {
  const std::string shown_cls = pickle::printable(cls, 80);
  if (key.empty())
    fail(ErrorKind::unsupported, what, ": a pickled torch module (class ", shown_cls,
         "), not a state dict: sg2 never runs pickled code, so it cannot rebuild a module; save its weights with "
         "torch.save(g_ema.state_dict(), 'g_ema.pt')");
  const std::string k = pickle::printable(key, 40);
  fail(ErrorKind::unsupported, what, ": '", k, "' is a pickled torch module (class ", shown_cls,
       "), not a state dict: sg2 never runs pickled code, so it cannot rebuild a module; save its weights in its "
       "place: torch.save({'",
       k, "': ", k, ".state_dict(), ...}, 'checkpoint.pt')");
}

/// Refuses a pickled module, except one laid out as the official generator (children `mapping` and
/// `synthesis`), which family_ada.cpp reads as data like a re-pickled network. (Under 'G_ema', the
/// official key, every module goes to family_ada.cpp, whose walk names what it cannot read.)
void refuse_module(const std::string& what, const Node* n, const std::string& key) {
  std::string cls = pickle::torch_module_class(n);
  if (cls.empty()) return;
  const Node* children = pickle::attr(n, "_modules");
  if (pickle::dict_get(children, "mapping") != nullptr && pickle::dict_get(children, "synthesis") != nullptr) return;
  fail_pickled_module(what, cls, key);
}

bool is_rosinality_state_dict(const Node* n) {
  return pickle::dict_get(n, "style.1.weight") != nullptr && pickle::dict_get(n, "input.input") != nullptr;
}

/// What a key prefix says about where a state dict came from.
std::string prefix_origin(const std::string& prefix) {
  const std::string first = prefix.substr(0, prefix.find('.'));  // of "module.module.", "module"
  if (first == "module") return "a DataParallel / DistributedDataParallel model's state dict";
  if (first == "_orig_mod") return "a torch.compile model's state dict";
  return "the state dict of a model that holds the network as '" + first + "'";
}

/// When every key of the dict-like `sd` (two or more) is a string that starts with one first component and a dot
/// ("module.style.1.weight"), the dict without that prefix; after a wrapper's prefix (`module.`,
/// `_orig_mod.`) again while one remains, at most 4 levels ("module.module.", "module.generator.");
/// `*prefix` is what was removed (printable). Returns `sd` itself, with `*prefix`
/// empty, when the keys have no common prefix. The new dict and its keys live in the checkpoint's
/// document (charged to its budget); the values are shared.
const Node* without_key_prefix(Checkpoint& ck, const Node* sd, std::string* prefix) {
  prefix->clear();
  for (int level = 0; level < 4; ++level) {
    std::vector<std::pair<const Node*, const Node*>> items;
    if (!pickle::dict_items(sd, &items) || items.size() < 2) return sd;  // one key has no "common" prefix
    auto first = pickle::as_str(items[0].first);
    const size_t dot = first ? first->find('.') : std::string_view::npos;
    if (dot == std::string_view::npos || dot == 0) return sd;
    const std::string_view p = first->substr(0, dot + 1);
    for (const auto& kv : items) {
      auto k = pickle::as_str(kv.first);
      if (!k || k->size() <= p.size() || k->substr(0, p.size()) != p) return sd;
    }
    pickle::Node* out = ck.doc.make(pickle::Kind::dict, sd->offset);
    ck.budget.charge(items.size() * sizeof(std::pair<Node*, Node*>), "key prefix removal");
    for (const auto& kv : items) {
      pickle::Node* k = ck.doc.make(pickle::Kind::string, kv.first->offset);
      k->s = kv.first->s.substr(p.size());
      out->entries.emplace_back(k, const_cast<Node*>(kv.second));
    }
    *prefix += pickle::printable(p, 40);
    sd = out;
    if (p != "module." && p != "_orig_mod.") break;  // only wrappers nest ("module.generator.")
  }
  return sd;
}

std::string prefix_note(const std::string& prefix) {
  return "every state dict key starts with '" + prefix + "' (" + prefix_origin(prefix) +
         "): sg2 read the keys without it";
}

/// A rosinality generator state dict `sd` (keys maybe under one prefix), or the error saying why not.
Conversion from_rosinality(Checkpoint& ck, const Node* top, const Node* sd, const std::string& where,
                           const std::string& key) {
  std::string prefix;
  const Node* bare = without_key_prefix(ck, sd, &prefix);
  const std::string in = key.empty() ? "" : "'" + key + "' is ";
  if (is_official_state_dict(bare) && prefix.empty()) fail_official_state_dict(ck.what, in);
  if (is_official_state_dict(bare))
    fail(ErrorKind::unsupported, ck.what, ": unsupported: ", in,
         "a bare state dict of an official generator with every key under '", prefix, "' (", prefix_origin(prefix),
         "); its module attributes are missing (conv_clamp, fp16 blocks, gains): convert the original network "
         "pickle instead");
  if (!prefix.empty() && !is_rosinality_state_dict(bare))
    fail(ErrorKind::unsupported, ck.what, ": unsupported: ", key.empty() ? "every key" : "every key of '" + key + "'",
         " starts with '", prefix, "' (", prefix_origin(prefix), "), and without it the keys (",
         pickle::key_list(bare, 6), ") are not a StyleGAN2 generator's");
  Conversion c = convert_rosinality(ck, top, bare, where);
  if (!prefix.empty()) c.notes.push_back(prefix_note(prefix));
  return c;
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
        std::string prefix;
        const Node* bare = without_key_prefix(ck, g, &prefix);
        if (is_official_state_dict(bare) || is_rosinality_state_dict(bare) || !prefix.empty())
          return from_rosinality(ck, root, g, "G_ema", "G_ema");
        fail(ErrorKind::unsupported, what, ": unsupported: 'G_ema' is a state dict (keys ", pickle::key_list(g),
             "), not a StyleGAN2 generator network");
      }
      return convert_ada_generator(ck, g, "G_ema");
    }
    if (const Node* gs = pickle::dict_get(root, "Gs"); gs && is_tf_network(gs)) return from_tf(ck, gs, "Gs");
    if (const Node* g = pickle::dict_get(root, "g_ema"); g && !pickle::is_none(g)) {
      refuse_module(what, g, "g_ema");
      return from_rosinality(ck, root, g, "g_ema", "g_ema");
    }
    std::string prefix;
    const Node* bare = without_key_prefix(ck, root, &prefix);
    if (is_rosinality_state_dict(bare) || is_official_state_dict(bare) || !prefix.empty())
      return from_rosinality(ck, nullptr, root, "generator state dict", "");
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
  refuse_module(what, root, "");
  if (root != nullptr && root->kind == pickle::Kind::object)
    fail(ErrorKind::bad_file, what, ": not a checkpoint: its top-level value is a call to ", callable_for_message(root),
         ", refused (sg2 never runs code from a pickle; Python would have run it on load)");
  fail(ErrorKind::bad_file, what, ": not a recognised checkpoint: the pickle holds ", pickle::describe(root));
}

}  // namespace sg2::readers
