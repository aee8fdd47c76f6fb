// sg2 readers: reading the inert values of a parsed pickle (pickle.h).
//
// These helpers give meaning to the few recorded calls a checkpoint needs to be read as data —
// dict-like containers (`collections.OrderedDict`, `dnnlib.util.EasyDict`), attribute state from
// BUILD, globals by dotted path — and describe values in one-line messages. Nothing here walks a
// value graph without a depth bound, so shared or cyclic structure cannot make them loop.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "readers/pickle.h"

namespace sg2::readers::pickle {

/// The dotted path of a global node, with Python 2 and numpy 2 module names normalised so one
/// spelling matches both: `__builtin__` -> `builtins`, `copy_reg` -> `copyreg`,
/// `numpy._core.X` -> `numpy.core.X`. "" for anything that is not a global.
std::string global_path(const Node* n);

/// For an object node whose callable is a global: that global's path (normalised); else "".
std::string call_path(const Node* n);

/// True when `n` is an object made by calling the global `path` (normalised spelling).
bool is_call(const Node* n, std::string_view path);

/// For a pickled `torch.nn.Module` instance (torch.save(model), not model.state_dict()): the
/// dotted path of its class, from the class's GLOBAL or, in the legacy torch.save format, from the
/// `('module', class, source_file, source)` persistent id that stands for the class. A module is an
/// object made by NEWOBJ / REDUCE of a class whose BUILD state is a dict holding `_modules` and
/// `_parameters` (nn.Module.__dict__); "a class without a name" when its class is neither. "" for
/// anything else.
std::string torch_module_class(const Node* n);

/// The positional arguments of an object node (empty when none or not an object).
const std::vector<Node*>& call_args(const Node* n);

/// Key/value pairs of a dict-like value: a dict; an object with SETITEM(S) entries (OrderedDict,
/// EasyDict, defaultdict, ...); an `OrderedDict([(k, v), ...])` call. Returns false (and leaves
/// `out` empty) for anything else.
bool dict_items(const Node* n, std::vector<std::pair<const Node*, const Node*>>* out);

/// True when `n` is dict-like in the sense of dict_items().
bool is_dict_like(const Node* n);

/// The value stored under the string key `key` of a dict-like value (the last one if repeated),
/// or nullptr when absent or `n` is not dict-like.
const Node* dict_get(const Node* n, std::string_view key);

/// An attribute of a recorded object: its BUILD state when that is a dict (or a
/// `(dict, slots)` tuple), else its dict-like entries. nullptr when absent.
const Node* attr(const Node* n, std::string_view name);

/// Typed views; nullopt / nullptr when the value has another type.
std::optional<std::string_view> as_str(const Node* n);  ///< str (also latin-1 byte strings)
std::optional<int64_t> as_int(const Node* n);           ///< int or bool (not big integers)
std::optional<bool> as_bool(const Node* n);             ///< bool, or int 0 / 1
const std::vector<Node*>* as_seq(const Node* n);        ///< tuple or list items
bool is_none(const Node* n);

/// A short, printable description for messages: "dict (5 keys)", "tuple of 3", "str 'G_ema'",
/// "call of numpy.dtype", "int 4". Looks at most one level deep.
std::string describe(const Node* n);

/// The string keys of a dict-like value, quoted and comma separated, at most `max_keys` of them
/// ("'G', 'D', 'G_ema'").
std::string key_list(const Node* n, size_t max_keys = 12);

}  // namespace sg2::readers::pickle
