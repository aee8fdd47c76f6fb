// sg2: temporary files and interrupts.
//
// Every file sg2 writes (model files, PNG and .npy images, grids, ws) is written to a temporary
// file beside its destination and renamed into place, so a destination is either complete or
// absent. While a temporary file exists it is registered; install_interrupt_cleanup() makes every
// terminating signal a program can catch remove the registered ones before the process ends, so
// an interrupted run leaves no `*.tmp.<pid>` files behind. Files already renamed into place are
// whole and are kept.
#pragma once

#include <string>

#include "sg2/export.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// Installs handlers for the terminating signals a program can catch (SIGINT, SIGTERM, SIGHUP,
/// SIGQUIT, SIGUSR1 — what Slurm's --signal sends before a time limit —, SIGUSR2, SIGALRM,
/// SIGVTALRM, SIGPROF, SIGXCPU, SIGPIPE, SIGPWR) that remove the temporary files sg2 is writing
/// at that moment and then end the process as the signal would have (the default action is
/// restored and the signal raised again, so the exit status says which signal). SIGXFSZ is
/// ignored, so that a file-size limit (ulimit -f) fails the write with EFBIG — an sg2::Error
/// naming the file and the limit — instead of killing the process. With `program` ("sg2
/// generate"), the handler also says on stderr which signal stopped it and that the unfinished
/// files were removed (not for SIGPIPE). For programs; the sg2 CLI calls it first. Idempotent.
/// A program with its own handlers calls remove_temporary_files() from them instead.
void install_interrupt_cleanup(const char* program = nullptr);

/// Removes every temporary file sg2 is writing now (unlink only: async-signal-safe, for use in
/// a signal handler; it waits at most 2 s in all for files other threads are creating at that
/// moment). The writes themselves then fail if they go on.
void remove_temporary_files() noexcept;

/// Registers a temporary file that the program creates itself (sg2 interpolate: the video that
/// ffmpeg writes), so that the interrupt cleanup removes it too. Returns a handle for
/// unregister_temporary_file; waits while 1,024 files are registered. Thread-safe. Throws
/// sg2::Error(io) for a path of 4,096 bytes or more.
int register_temporary_file(const std::string& path);
/// The file of `handle` was renamed or removed by the program (-1 is ignored).
void unregister_temporary_file(int handle) noexcept;

/// A child process (pid > 0; 0 for none) that the interrupt handler of install_interrupt_cleanup
/// ends with SIGTERM before the program ends, so that an interrupted run leaves no orphan behind.
void set_child_process(int pid) noexcept;

/// A function that the interrupt handler of install_interrupt_cleanup calls with the signal's
/// number after it has removed the temporary files (and ended the child process) and before the
/// process ends: the place to say what the interruption left (the sg2 CLI removes the empty
/// folders the run created and prints one line). It runs inside the signal handler, so it may
/// only use async-signal-safe calls (write, rmdir, ...); nullptr for none (the default).
/// With a callback set, the handler's own line (install_interrupt_cleanup's `program`) is not printed.
void set_interrupt_callback(void (*callback)(int signal)) noexcept;

/// "SIGUSR1", "SIGXCPU (the CPU time limit)", ...: the name of a signal the cleanup handles
/// ("a signal" for another); a static string, safe to use in a signal handler.
const char* interrupt_signal_name(int signal) noexcept;

}  // namespace sg2
SG2_PUBLIC_END
