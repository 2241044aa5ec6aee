#include "CSendBatch.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <liburing.h>

struct rollcall_send_batch {
    struct io_uring ring;
    unsigned entries;
    /// Sends still in flight when their submission returned, cancelled (see the run).
    unsigned unfinished;
};

rollcall_send_batch *rollcall_send_batch_create(unsigned entries, int *error) {
    rollcall_send_batch *batch = calloc(1, sizeof *batch);
    if (!batch) { *error = ENOMEM; return NULL; }
    int status = io_uring_queue_init(entries, &batch->ring, 0);
    if (status < 0) { *error = -status; free(batch); return NULL; }
    struct io_uring_probe *probe = io_uring_get_probe_ring(&batch->ring);
    int supported = probe && io_uring_opcode_supported(probe, IORING_OP_SEND);
    if (probe) io_uring_free_probe(probe);
    if (!supported) {
        io_uring_queue_exit(&batch->ring);
        free(batch);
        *error = ENOSYS;
        return NULL;
    }
    batch->entries = entries;
    return batch;
}

void rollcall_send_batch_destroy(rollcall_send_batch *batch) {
    if (!batch) return;
    io_uring_queue_exit(&batch->ring);
    free(batch);
}

/// The user data of a cancellation request (a send's is its index, always smaller).
static const uint64_t cancel_tag = UINT64_MAX;

/// Takes the completion in hand into `results`; returns 1 for a send's, 0 for a cancel's.
static int take(rollcall_send_batch *batch, struct io_uring_cqe *cqe, int32_t *results) {
    uint64_t data = io_uring_cqe_get_data64(cqe);
    int32_t res = cqe->res;
    io_uring_cqe_seen(&batch->ring, cqe);
    if (data == cancel_tag) return 0;
    results[data] = res;
    return 1;
}

/// Waits for the next completion (retrying on EINTR).
static int wait_one(rollcall_send_batch *batch, struct io_uring_cqe **cqe) {
    int status;
    do { status = io_uring_wait_cqe(&batch->ring, cqe); } while (status == -EINTR);
    return status;
}

int rollcall_send_batch_run(rollcall_send_batch *batch, const int32_t *fds,
                            const uint8_t *const *buffers, const uint32_t *lengths,
                            int32_t *results, size_t count) {
    return rollcall_send_batch_run_flags(batch, fds, buffers, lengths, results, count, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int rollcall_send_batch_run_flags(rollcall_send_batch *batch, const int32_t *fds,
                                  const uint8_t *const *buffers, const uint32_t *lengths,
                                  int32_t *results, size_t count, int flags) {
    for (size_t i = 0; i < count; i++) results[i] = -ECANCELED;
    size_t start = 0;
    while (start < count) {
        size_t chunk = count - start;
        if (chunk > batch->entries) chunk = batch->entries;
        for (size_t i = 0; i < chunk; i++) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&batch->ring);
            // MSG_DONTWAIT: an EAGAIN completes the request instead of arming a poll, so
            // every request is complete when the submission returns.
            io_uring_prep_send(sqe, fds[start + i], buffers[start + i], lengths[start + i], flags);
            io_uring_sqe_set_data64(sqe, start + i);
        }
        int submitted = io_uring_submit(&batch->ring);
        // Requests the kernel did not take stay in the ring: the caller must destroy it.
        if (submitted < 0) return submitted;
        int done = 0;
        struct io_uring_cqe *cqe;
        while (done < submitted && io_uring_peek_cqe(&batch->ring, &cqe) == 0) done += take(batch, cqe, results);
        if (done < submitted) {
            // A kernel that waits for the socket despite MSG_DONTWAIT (older ones may): cancel
            // what is still in flight, so that no buffer is used after this returns and the
            // service thread does not wait for a peer. A cancelled send sent nothing
            // (-ECANCELED); one that completed meanwhile reports what it sent.
            int cancels = 0;
            for (size_t i = start; i < start + (size_t)submitted; i++) {
                if (results[i] != -ECANCELED) continue;
                struct io_uring_sqe *sqe = io_uring_get_sqe(&batch->ring);
                if (!sqe) break;
                io_uring_prep_cancel64(sqe, i, 0);
                io_uring_sqe_set_data64(sqe, cancel_tag);
                cancels++;
            }
            if (cancels > 0 && io_uring_submit(&batch->ring) < 0) return -EIO;
            while (done < submitted) {
                int status = wait_one(batch, &cqe);
                if (status < 0) return status;
                done += take(batch, cqe, results);
            }
            // The cancellations' own completions.
            while (io_uring_peek_cqe(&batch->ring, &cqe) == 0) take(batch, cqe, results);
            batch->unfinished += (unsigned)cancels;
        }
        if ((size_t)submitted != chunk) return -EIO;
        start += chunk;
    }
    return 0;
}

unsigned rollcall_send_batch_unfinished(const rollcall_send_batch *batch) { return batch->unfinished; }
