#ifndef ROLLCALL_SEND_BATCH_H
#define ROLLCALL_SEND_BATCH_H

#include <stddef.h>
#include <stdint.h>

/// One io_uring that sends many buffers, each to its own socket, in one system call
/// (docs/transport.md, "Batched sends"). Owned by the service thread; not thread-safe.
typedef struct rollcall_send_batch rollcall_send_batch;

/// A ring of `entries` submissions, or NULL when this kernel has no io_uring, refuses it
/// (seccomp, `kernel.io_uring_disabled`) or lacks `IORING_OP_SEND`; then `*error` is the
/// positive errno (ENOSYS when the operation is missing).
rollcall_send_batch *rollcall_send_batch_create(unsigned entries, int *error);

void rollcall_send_batch_destroy(rollcall_send_batch *batch);

/// Sends `lengths[i]` bytes at `buffers[i]` to socket `fds[i]`, for i < count, with
/// `MSG_DONTWAIT | MSG_NOSIGNAL`: like `send()` on a non-blocking socket, each either
/// completes at once or fails with EAGAIN, so nothing is left in flight and the buffers
/// may be reused on return. (A kernel that still waits for a full socket gets that send
/// cancelled before this returns: -ECANCELED, nothing sent; see
/// ``rollcall_send_batch_unfinished``.) `results[i]` is the number of bytes sent (possibly fewer than
/// asked: the socket's buffer filled) or a negative errno; -ECANCELED means not sent
/// because the ring failed first. Submits at most the ring's entries per system call.
/// Returns 0, or a negative errno when the ring itself failed: then destroy it.
int rollcall_send_batch_run(rollcall_send_batch *batch, const int32_t *fds,
                            const uint8_t *const *buffers, const uint32_t *lengths,
                            int32_t *results, size_t count);

/// ``rollcall_send_batch_run`` with other `send` flags: for tests of the cancellation path
/// (without `MSG_DONTWAIT` a send to a full blocking socket waits in the kernel).
int rollcall_send_batch_run_flags(rollcall_send_batch *batch, const int32_t *fds,
                                  const uint8_t *const *buffers, const uint32_t *lengths,
                                  int32_t *results, size_t count, int flags);

/// How many sends were still in flight when their submission returned and had to be
/// cancelled (0 on kernels that honour `MSG_DONTWAIT` in io_uring, as the 6.18 this was built on does).
unsigned rollcall_send_batch_unfinished(const rollcall_send_batch *batch);

#endif
