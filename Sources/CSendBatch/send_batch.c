#include "CSendBatch.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <liburing.h>

struct rollcall_send_batch {
    struct io_uring ring;
    unsigned entries;
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

int rollcall_send_batch_run(rollcall_send_batch *batch, const int32_t *fds,
                            const uint8_t *const *buffers, const uint32_t *lengths,
                            int32_t *results, size_t count) {
    for (size_t i = 0; i < count; i++) results[i] = -ECANCELED;
    size_t start = 0;
    while (start < count) {
        size_t chunk = count - start;
        if (chunk > batch->entries) chunk = batch->entries;
        for (size_t i = 0; i < chunk; i++) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&batch->ring);
            // MSG_DONTWAIT: an EAGAIN completes the request instead of arming a poll, so
            // every request is complete when the submission returns.
            io_uring_prep_send(sqe, fds[start + i], buffers[start + i], lengths[start + i],
                               MSG_DONTWAIT | MSG_NOSIGNAL);
            io_uring_sqe_set_data64(sqe, start + i);
        }
        int submitted = io_uring_submit(&batch->ring);
        for (int done = 0; done < submitted; done++) {
            struct io_uring_cqe *cqe;
            int status = io_uring_peek_cqe(&batch->ring, &cqe);
            while (status == -EAGAIN || status == -EINTR) status = io_uring_wait_cqe(&batch->ring, &cqe);
            if (status < 0) return status;
            results[io_uring_cqe_get_data64(cqe)] = cqe->res;
            io_uring_cqe_seen(&batch->ring, cqe);
        }
        // Requests the kernel did not take stay in the ring: the caller must destroy it.
        if (submitted < 0) return submitted;
        if ((size_t)submitted != chunk) return -EIO;
        start += chunk;
    }
    return 0;
}
