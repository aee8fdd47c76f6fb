// sg2 readers: reading the inert values of a parsed pickle (pickle_access.h).
#include "readers/pickle_access.h"

namespace sg2::readers::pickle {

namespace {

std::string normalise_module(std::string_view m) {
  if (m == "__builtin__") return "builtins";
  if (m == "copy_reg") return "copyreg";
  if (m.substr(0, 12) == "numpy._core.") return "numpy.core." + std::string(m.substr(12));
  if (m == "numpy._core") return "numpy.core";
  return std::string(m);
}

const std::vector<Node*> kNoItems;

bool is_pair(const Node* p) {
  const std::vector<Node*>* kv = as_seq(p);
  return kv != nullptr && kv->size() == 2;
}

}  // namespace

std::string global_path(const Node* n) {
  if (n == nullptr || n->kind != Kind::global) return "";
  return normalise_module(n->s) + "." + std::string(n->s2);
}

std::string call_path(const Node* n) {
  if (n == nullptr || n->kind != Kind::object) return "";
  return global_path(n->callable);
}

bool is_call(const Node* n, std::string_view path) {
  if (n == nullptr || n->kind != Kind::object || n->callable == nullptr || n->callable->kind != Kind::global)
    return false;
  return global_path(n->callable) == path;
}

std::string torch_module_class(const Node* n) {
  if (n == nullptr || n->kind != Kind::object || n->state == nullptr) return "";
  if (attr(n, "_modules") == nullptr || attr(n, "_parameters") == nullptr) return "";
  const Node* cls = n->callable;
  if (cls != nullptr && cls->kind == Kind::global) return global_path(cls);
  if (cls != nullptr && cls->kind == Kind::persistent_id) {  // legacy torch.save: ('module', class, file, source)
    const std::vector<Node*>* pid = as_seq(cls->args);
    if (pid != nullptr && pid->size() >= 2 && as_str((*pid)[0]) == std::optional<std::string_view>("module"))
      return global_path((*pid)[1]);
  }
  return "a class without a name";
}

const std::vector<Node*>& call_args(const Node* n) {
  if (n == nullptr || n->kind != Kind::object || n->args == nullptr) return kNoItems;
  return n->args->items;
}

bool dict_items(const Node* n, std::vector<std::pair<const Node*, const Node*>>* out) {
  out->clear();
  if (n == nullptr) return false;
  if (n->kind == Kind::dict) {
    out->assign(n->entries.begin(), n->entries.end());
    return true;
  }
  if (n->kind != Kind::object) return false;
  const std::string path = call_path(n);
  const bool known = path == "collections.OrderedDict" || path == "dnnlib.util.EasyDict" ||
                     path == "collections.defaultdict" || path == "builtins.dict";
  if (!known && n->entries.empty()) return false;
  // OrderedDict([(k, v), ...]) or dict({...}) as the first argument, then any SETITEMS.
  const std::vector<Node*>& args = call_args(n);
  if (known && !args.empty()) {
    const Node* a0 = args[0];
    if (a0->kind == Kind::dict) {
      out->assign(a0->entries.begin(), a0->entries.end());
    } else if (const std::vector<Node*>* pairs = as_seq(a0)) {
      for (const Node* p : *pairs) {
        if (!is_pair(p)) continue;
        out->emplace_back(p->items[0], p->items[1]);
      }
    }
  }
  out->insert(out->end(), n->entries.begin(), n->entries.end());
  return true;
}

bool is_dict_like(const Node* n) {
  std::vector<std::pair<const Node*, const Node*>> tmp;
  if (n != nullptr && n->kind == Kind::dict) return true;
  return dict_items(n, &tmp);
}

const Node* dict_get(const Node* n, std::string_view key) {
  if (n == nullptr) return nullptr;
  if (n->kind == Kind::dict) {
    for (auto it = n->entries.rbegin(); it != n->entries.rend(); ++it) {
      auto k = as_str(it->first);
      if (k && *k == key) return it->second;
    }
    return nullptr;
  }
  std::vector<std::pair<const Node*, const Node*>> items;
  if (!dict_items(n, &items)) return nullptr;
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    auto k = as_str(it->first);
    if (k && *k == key) return it->second;
  }
  return nullptr;
}

const Node* attr(const Node* n, std::string_view name) {
  if (n == nullptr) return nullptr;
  if (n->kind == Kind::object && n->state != nullptr) {
    const Node* st = n->state;
    if (st->kind == Kind::tuple && st->items.size() == 2) {  // (dict, slots)
      if (const Node* v = dict_get(st->items[0], name)) return v;
      return dict_get(st->items[1], name);
    }
    if (const Node* v = dict_get(st, name)) return v;
  }
  return dict_get(n, name);
}

std::optional<std::string_view> as_str(const Node* n) {
  if (n == nullptr || n->kind != Kind::string) return std::nullopt;
  return n->s;
}

std::optional<int64_t> as_int(const Node* n) {
  if (n == nullptr || (n->kind != Kind::integer && n->kind != Kind::boolean)) return std::nullopt;
  return n->i;
}

std::optional<bool> as_bool(const Node* n) {
  if (n == nullptr) return std::nullopt;
  if (n->kind == Kind::boolean) return n->i != 0;
  if (n->kind == Kind::integer && (n->i == 0 || n->i == 1)) return n->i != 0;
  return std::nullopt;
}

const std::vector<Node*>* as_seq(const Node* n) {
  if (n == nullptr || (n->kind != Kind::tuple && n->kind != Kind::list)) return nullptr;
  return &n->items;
}

bool is_none(const Node* n) { return n != nullptr && n->kind == Kind::none; }

std::string describe(const Node* n) {
  if (n == nullptr) return "nothing";
  switch (n->kind) {
    case Kind::none:
      return "None";
    case Kind::boolean:
      return n->i ? "True" : "False";
    case Kind::integer:
      return "int " + std::to_string(n->i);
    case Kind::big_integer:
      return n->i == 1 ? "a " + std::to_string(n->s.size()) + "-digit int"
                       : "a " + std::to_string(n->s.size() * 8) + "-bit int";
    case Kind::floating:
      return "float " + std::to_string(n->f);
    case Kind::string:
      return "str '" + printable(n->s, 40) + "'";
    case Kind::bytes:
      return "bytes (" + std::to_string(n->s.size()) + ")";
    case Kind::bytearray:
      return "bytearray (" + std::to_string(n->s.size()) + ")";
    case Kind::tuple:
      return "tuple of " + std::to_string(n->items.size());
    case Kind::list:
      return "list of " + std::to_string(n->items.size());
    case Kind::dict:
      return "dict (" + std::to_string(n->entries.size()) + " keys)";
    case Kind::set:
    case Kind::frozenset:
      return "set of " + std::to_string(n->items.size());
    case Kind::global:
      return "global " + printable(global_path(n), 80);
    case Kind::object: {
      std::string p = call_path(n);
      return p.empty() ? std::string("call of a non-global value") : "call of " + printable(p, 80);
    }
    case Kind::persistent_id:
      return "persistent id";
  }
  return "?";
}

std::string key_list(const Node* n, size_t max_keys) {
  std::vector<std::pair<const Node*, const Node*>> items;
  if (!dict_items(n, &items)) return "";
  std::string out;
  size_t k = 0;
  for (const auto& [key, value] : items) {
    (void)value;
    if (k == max_keys) {
      out += ", ...";
      break;
    }
    if (k++) out += ", ";
    auto s = as_str(key);
    out += s ? "'" + printable(*s, 40) + "'" : describe(key);
  }
  return out;
}

}  // namespace sg2::readers::pickle
