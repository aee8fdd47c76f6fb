// sg2 readers: a safe pickle reader (spec §7.0).
//
// A pickle is a program for a small stack machine. Python runs it and calls whatever callables it
// names (GLOBAL + REDUCE), which is why loading an untrusted pickle can run arbitrary code. This
// reader runs the same stack machine but never calls anything: GLOBAL pushes an inert `global`
// node carrying its dotted path, and REDUCE / NEWOBJ / NEWOBJ_EX / INST / OBJ push an inert
// `object` node carrying the callable, its arguments and, after BUILD, its state. Items added to
// such an object (SETITEMS on an OrderedDict, APPENDS on a list subclass) are recorded on it.
// Interpreting a small whitelist of these objects (torch tensors, numpy arrays, OrderedDict, ...)
// is left to the callers (pickle_access.h, numpy_decode.h, torch_storage.h); nothing else ever
// gets a meaning.
//
// Protocols 0-5 are read (all opcodes of CPython's pickletools, except the extension registry
// EXT1/2/4 and out-of-band buffers NEXT_BUFFER, which no checkpoint writer uses).
//
// Limits (a corrupt or hostile file gets an Error, never a crash or an unbounded allocation):
//  * every length field is checked against the bytes left before anything is read or allocated;
//  * the machine is iterative; the value stack and the mark stack are bounded (Limits);
//  * every node, container slot, memo entry and decoded string is charged to a Budget whose size
//    is a small multiple of the input file size (see Budget), shared by all nested pickles of a
//    file, so the total memory stays proportional to the file;
//  * the result may contain shared substructure and even cycles (as Python's memo allows), so
//    walkers must be depth-limited and must not expand shared nodes blindly (pickle_access.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sg2::readers::pickle {

/// Kinds of values the machine builds.
enum class Kind : uint8_t {
  none,
  boolean,        ///< i = 0 / 1
  integer,        ///< i (fits int64)
  big_integer,    ///< i = 0: s = raw little-endian two's complement bytes (LONG1/LONG4 longer than 8
                  ///< bytes); i = 1: s = the decimal digits, maybe after '-' (text INT/LONG beyond
                  ///< 64 bits, kept unconverted: see big_integer_bytes())
  floating,       ///< f
  string,         ///< s = UTF-8 text (str)
  bytes,          ///< s = raw bytes (bytes; BINSTRING of protocol 0-2 are decoded as latin-1 strings)
  bytearray,      ///< s = raw bytes
  tuple,          ///< items
  list,           ///< items
  dict,           ///< entries, in insertion order; a repeated key is appended (lookups take the last)
  set,            ///< items
  frozenset,      ///< items
  global,         ///< s = module, s2 = qualified name (GLOBAL / STACK_GLOBAL / INST class)
  object,         ///< callable(args [, kwargs]) recorded, never called; state from BUILD
  persistent_id,  ///< args = the pid value (PERSID / BINPERSID); resolved by torch.save readers
};

/// How an object node was made.
enum class Make : uint8_t { reduce, newobj, newobj_ex, inst, obj };

/// One value. Owned by a Document's arena; pointers stay valid as long as the Document lives.
/// Strings and bytes point into the input buffer (no copy) or into the arena's string store.
struct Node {
  Kind kind = Kind::none;
  Make make = Make::reduce;
  int64_t i = 0;
  double f = 0.0;
  std::string_view s;                            ///< string / bytes / big integer / global module
  std::string_view s2;                           ///< global name
  std::vector<Node*> items;                      ///< tuple, list, set; appended items of an object
  std::vector<std::pair<Node*, Node*>> entries;  ///< dict; SETITEM(S) applied to an object
  Node* callable = nullptr;                      ///< object: the callable (usually a global)
  Node* args = nullptr;    ///< object: the argument tuple (INST/OBJ: a tuple built from the mark);
                           ///< persistent_id: the pid value
  Node* kwargs = nullptr;  ///< object: NEWOBJ_EX keyword arguments
  Node* state = nullptr;   ///< BUILD state (the last BUILD wins)
  size_t offset = 0;       ///< absolute byte offset of the opcode that made the node (for messages)
};

/// Memory accounting shared by every pickle and tensor decoded from one file. The default limit is
/// 64 MiB + 8 x the file size: a real checkpoint needs a small fraction of that (its bulk is raw
/// tensor bytes, which are never copied), while a hostile one cannot make sg2 allocate more.
class Budget {
 public:
  explicit Budget(uint64_t limit_bytes, std::string what) : limit_(limit_bytes), what_(std::move(what)) {}
  static Budget for_file_size(uint64_t file_size, std::string what) {
    return Budget((64ull << 20) + 8ull * file_size, std::move(what));
  }
  /// Throws Error(bad_file) naming `what` and `context` when the total would exceed the limit.
  void charge(uint64_t bytes, const char* context);
  uint64_t used() const { return used_; }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t limit_;
  uint64_t used_ = 0;
  std::string what_;
};

/// Structural limits of the machine.
struct Limits {
  size_t max_stack = 100000;   ///< values on the stack (deep nesting built on the stack stops here)
  size_t max_marks = 100000;   ///< open MARKs
  size_t max_memo = 1u << 24;  ///< memo entries
};

/// Owns the nodes (and decoded strings) of one or more parsed pickles. Not copyable or movable, so
/// node pointers stay valid.
class Document {
 public:
  explicit Document(Budget* budget) : budget_(budget) {}
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;

  Node* make(Kind kind, size_t offset);
  /// Stores a decoded string and returns a view of it.
  std::string_view keep(std::string text);
  Budget& budget() { return *budget_; }
  /// Every persistent_id node made so far, in order (torch.save readers resolve them).
  std::vector<Node*>& persistent_ids() { return pids_; }

 private:
  Budget* budget_;
  std::vector<Node*> pids_;
  std::deque<Node> nodes_;
  std::deque<std::string> strings_;
};

/// Parses one pickle from `data[0, size)` (stopping at its STOP opcode) into `doc`.
/// `base_offset` is added to byte offsets in messages (the position of `data` in the file) and
/// `what` names the file or blob ("model.pkl", "the storage blob at byte 1234 of model.pkl").
/// Returns the value STOP found and sets `*end` to the number of bytes consumed.
/// Throws Error(bad_file) with the byte offset and opcode where the pickle breaks: truncation,
/// unknown opcode, stack underflow, memo miss, a length past the end, a limit exceeded, ...
/// Throws Error(unsupported) for EXT1/2/4 and NEXT_BUFFER.
Node* parse(Document& doc, const uint8_t* data, size_t size, size_t base_offset, const std::string& what,
            size_t* end = nullptr, const Limits& limits = {});

/// The value of a big_integer node as little-endian two's complement bytes (as LONG1 stores
/// it), converting decimal digits on demand; "" for other nodes.
std::string big_integer_bytes(const Node* n);

/// The pickletools name of an opcode byte ("BINUNICODE"), or nullptr when it is not an opcode.
const char* opcode_name(uint8_t op);

/// `text` made safe for a one-line message: printable ASCII kept, anything else as \xNN, cut to
/// `max_len` characters with "..." appended.
std::string printable(std::string_view text, size_t max_len = 60);

}  // namespace sg2::readers::pickle
