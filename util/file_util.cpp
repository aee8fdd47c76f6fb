// sg2 internal: file helpers (see file_util.h).
#include "util/file_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "sg2/error.h"
#include "sg2/interrupt.h"

namespace sg2::detail {

namespace {
std::string errno_text() {
  if (errno == EFBIG)  // SIGXFSZ is ignored (install_interrupt_cleanup): the write fails instead
    return std::string(std::strerror(EFBIG)) +
           " (the process's file-size limit, ulimit -f, or the largest file this file system holds)";
  return std::strerror(errno);
}
}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  if (path.empty()) fail(ErrorKind::io, "cannot open a file with an empty name");
  // O_NONBLOCK: opening a FIFO with no writer must not hang; only regular files are read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(ErrorKind::io, path, ": cannot open: ", errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(ErrorKind::io, path, ": cannot stat: ", errno_text());
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::io, path, ": is a directory, not a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::io, path, ": not a regular file (a device, pipe or socket cannot be read as a file)");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail(ErrorKind::io, path, ": cannot map ", size_, " bytes: ", errno_text());
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

std::vector<uint8_t> read_file(const std::string& path) {
  MappedFile m(path);
  return std::vector<uint8_t>(m.data(), m.data() + m.size());
}

void write_all(std::FILE* f, const void* data, size_t size, const std::string& path) {
  if (size == 0) return;
  if (std::fwrite(data, 1, size, f) != size) fail(ErrorKind::io, path, ": write failed: ", errno_text());
}

// --- temporary files and the interrupt cleanup (sg2/interrupt.h) ---------------------------
//
// A fixed table of the temporary files being written, readable from a signal handler. A slot's
// state goes 0 (free) -> 1 (path being stored) -> 3 (the file is being created) -> 2 (live) -> 0.
// The interrupt handler first sets g_closing, so that no thread starts creating a temporary file
// any more, waits (bounded) for the creations under way, and unlinks the live ones; a thread that
// registers after g_closing waits for the end of the process. seq_cst on both sides: a thread that
// did not see g_closing is seen by the handler in state 3 or 2.

namespace {

constexpr int kTempSlots = 1024;
constexpr size_t kTempPathMax = 4096;
struct TempSlot {
  std::atomic<int> state{0};
  char path[kTempPathMax];
};
TempSlot g_temp_slots[kTempSlots];
std::atomic<int> g_closing{0};
std::atomic<int> g_child_pid{0};
std::atomic<void (*)(int)> g_interrupt_callback{nullptr};

void wait_for_the_end() {
  for (;;) ::pause();  // the interrupt handler re-raises its signal: the process ends
}

void sleep_ms(long ms) {
  struct timespec ts {
    0, ms * 1000000L
  };
  ::nanosleep(&ts, nullptr);
}

}  // namespace

int register_temp(const std::string& tmp) {
  if (tmp.size() >= kTempPathMax)
    fail(ErrorKind::io, tmp, ": cannot write: the path is longer than ", kTempPathMax - 1, " bytes");
  for (int round = 0;; ++round) {
    for (int i = 0; i < kTempSlots; ++i) {
      int expected = 0;
      if (g_temp_slots[i].state.compare_exchange_strong(expected, 1)) {
        std::memcpy(g_temp_slots[i].path, tmp.c_str(), tmp.size() + 1);
        g_temp_slots[i].state.store(3);
        if (g_closing.load() != 0) {  // the process is ending: create nothing more
          g_temp_slots[i].state.store(0);
          wait_for_the_end();
        }
        return i;
      }
    }
    sleep_ms(1);  // all slots taken (more than 1,024 files at once): wait for one
  }
}

void temp_created(int slot) {
  if (slot >= 0) g_temp_slots[slot].state.store(2);
}

void unregister_temp(int slot) {
  if (slot >= 0) g_temp_slots[slot].state.store(0);
}

namespace {

// The terminating signals a program can catch: a user (INT, QUIT), a session (HUP), a job
// scheduler before a time limit (TERM; Slurm's --signal sends USR1 by default), timers and CPU
// limits (ALRM, VTALRM, PROF, XCPU), a closed pipe (PIPE), power (PWR).
constexpr int kCleanupSignals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                                   SIGALRM, SIGPIPE, SIGXCPU, SIGPROF, SIGPWR,  SIGVTALRM};
char g_program[64];  // "sg2 generate": who says what happened ("" for silence)

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGALRM:
      return "SIGALRM";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGXCPU:
      return "SIGXCPU (the CPU time limit)";
    case SIGPROF:
      return "SIGPROF";
    case SIGPWR:
      return "SIGPWR";
    case SIGVTALRM:
      return "SIGVTALRM";
    default:
      return "a signal";
  }
}

void say_async(const char* a, const char* b = "", const char* c = "", const char* d = "") {
  for (const char* s : {a, b, c, d}) {
    size_t n = std::strlen(s);
    while (n > 0) {
      const ssize_t w = ::write(2, s, n);
      if (w <= 0) return;  // stderr gone (a closed pipe): nothing to say it on
      s += w;
      n -= static_cast<size_t>(w);
    }
  }
}

void sg2_interrupt_handler(int sig) {
  g_closing.store(1);
  const pid_t child = g_child_pid.load();
  if (child > 0) ::kill(child, SIGTERM);
  sg2::remove_temporary_files();
  if (void (*callback)(int) = g_interrupt_callback.load()) {
    callback(sig);  // the program reports (the CLI: which files were kept, which folders removed)
  } else if (g_program[0] != '\0' && sig != SIGPIPE) {
    say_async("\n", g_program, ": stopped by ", signal_name(sig));
    say_async(": the files being written were removed; the finished ones are kept\n");
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void check_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent (or unreachable: the open below says why)
  if (S_ISREG(st.st_mode)) return;
  const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISLNK(st.st_mode)  ? "a symbolic link"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "a device";
  fail(ErrorKind::io, path, ": cannot write: it exists and is ", what,
       ", not a regular file (sg2 replaces only regular files; remove it or choose another name)");
}

}  // namespace

void check_output_path(const std::string& path) { check_replaceable(path); }

int create_temp_file(const std::string& path, std::string* tmp, int* slot) {
  std::string base = path + ".tmp." + std::to_string(::getpid());
  bool short_name = false;
  for (int attempt = 0;; ++attempt) {
    static std::atomic<uint64_t> short_names{0};
    *tmp = short_name ? base + "." + std::to_string(short_names++)
                      : (attempt == 0 ? base : base + "." + std::to_string(attempt));
    *slot = register_temp(*tmp);  // before the file exists: an interrupt from here on removes it
    // A new file only (O_EXCL), never through a link (O_NOFOLLOW): a name planted beside the
    // output (a symbolic link to another file, a FIFO, a stale temporary) is never written through.
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    const int err = errno;
    if (fd >= 0) {
      temp_created(*slot);
      return fd;
    }
    unregister_temp(*slot);
    *slot = -1;
    if ((err == EEXIST || err == ELOOP) && attempt < 16) continue;
    if (err == ENAMETOOLONG && !short_name) {
      // a name near the file system's 255-byte limit: a short temporary name in the same folder
      const size_t slash = path.rfind('/');
      base = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + ".sg2-" +
             std::to_string(::getpid()) + ".tmp";
      short_name = true;
      attempt = -1;
      continue;
    }
    errno = err;
    fail(ErrorKind::io, path, ": cannot write: ", errno_text());
  }
}

TempFile::TempFile(std::string path) : path_(std::move(path)) {
  check_replaceable(path_);
  const int fd = create_temp_file(path_, &tmp_, &slot_);
  f_ = ::fdopen(fd, "wb");
  if (f_ != nullptr) return;
  const std::string why = errno_text();
  ::close(fd);
  ::unlink(tmp_.c_str());
  unregister_temp(slot_);
  slot_ = -1;
  fail(ErrorKind::io, path_, ": cannot write: ", why);
}

TempFile::~TempFile() {
  if (f_ != nullptr) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
  unregister_temp(slot_);
}

void TempFile::commit() {
  std::FILE* f = f_;
  f_ = nullptr;
  const bool flushed = std::fflush(f) == 0;
  const std::string flush_why = flushed ? "" : errno_text();
  if (std::fclose(f) != 0 || !flushed) {
    const std::string why = flushed ? errno_text() : flush_why;
    std::remove(tmp_.c_str());
    unregister_temp(slot_);
    slot_ = -1;
    fail(ErrorKind::io, path_, ": write failed: ", why);
  }
  check_replaceable(path_);  // nothing but a regular file is replaced, also when it appeared meanwhile
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = errno_text();
    std::remove(tmp_.c_str());
    unregister_temp(slot_);
    slot_ = -1;
    fail(ErrorKind::io, path_, ": cannot rename into place: ", why);
  }
  unregister_temp(slot_);
  slot_ = -1;
}

void write_file_atomic(const std::string& path, const std::function<void(std::FILE*)>& write) {
  TempFile t(path);
  write(t.file());
  t.commit();
}

void write_file_atomic(const std::string& path, const void* data, size_t size) {
  write_file_atomic(path, [&](std::FILE* f) { write_all(f, data, size, path); });
}

void make_dirs(const std::string& path) {
  if (path.empty()) return;
  std::string cur;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    cur = path.substr(0, next);
    pos = next + 1;
    if (cur.empty()) continue;
    struct stat st {};
    if (::stat(cur.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) fail(ErrorKind::io, path, ": cannot create directory: ", cur, " is a file");
      continue;
    }
    if (::mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST)
      fail(ErrorKind::io, path, ": cannot create directory: ", errno_text());
  }
}

std::string base_name(const std::string& path) {
  size_t p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

// --- half / bfloat16 ------------------------------------------------------------------------

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400) == 0);
      man &= 0x3ff;
      bits = sign | (uint32_t(127 - 15 - e) << 23) | (man << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) return uint16_t(sign | 0x7c00);  // rounds to >= 65520 -> inf
  if (absx < 0x38800000) {                                 // subnormal or zero in half
    if (absx < 0x33000000) return uint16_t(sign);          // < 2^-25 rounds to 0
    uint32_t e = absx >> 23;
    uint32_t m = (absx & 0x7fffff) | 0x800000;
    int shift = int(126 - e);  // value = m * 2^(e-150); in units of 2^-24: m >> (126 - e)
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = ((absx - 0x38000000) >> 13);
  uint32_t rem = absx & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return uint16_t(sign | r);
}

}  // namespace sg2::detail

namespace sg2 {

void remove_temporary_files() noexcept {
  // Creations under way (state 3) end within microseconds on other threads; when this handler
  // interrupted the creating thread itself, its open() has either happened or never will: after
  // the bounded wait, the name is unlinked either way.
  int waited_ms = 0;
  for (auto& slot : detail::g_temp_slots) {
    while (slot.state.load() == 3 && waited_ms < 2000) {
      detail::sleep_ms(1);
      ++waited_ms;
    }
    const int st = slot.state.load();
    if (st == 2 || st == 3) ::unlink(slot.path);
  }
}

int register_temporary_file(const std::string& path) {
  const int slot = detail::register_temp(path);
  detail::temp_created(slot);
  return slot;
}

void unregister_temporary_file(int handle) noexcept { detail::unregister_temp(handle); }

void set_child_process(int pid) noexcept { detail::g_child_pid.store(pid); }

void set_interrupt_callback(void (*callback)(int signal)) noexcept { detail::g_interrupt_callback.store(callback); }

const char* interrupt_signal_name(int sig) noexcept { return detail::signal_name(sig); }

void install_interrupt_cleanup(const char* program) {
  const size_t n = program ? std::min(std::strlen(program), sizeof detail::g_program - 1) : 0;
  if (n > 0) std::memcpy(detail::g_program, program, n);
  detail::g_program[n] = '\0';
  // A file-size limit (ulimit -f) makes write() fail with EFBIG, a clear error and the usual
  // cleanup, instead of SIGXFSZ killing the process with its temporary files left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  for (int sig : detail::kCleanupSignals) {
    struct sigaction sa {};
    sa.sa_handler = detail::sg2_interrupt_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;  // a second signal while cleaning up ends the process at once
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace sg2
