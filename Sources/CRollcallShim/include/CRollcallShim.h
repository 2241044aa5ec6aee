#ifndef CROLLCALL_SHIM_H
#define CROLLCALL_SHIM_H

#include <libwebsockets.h>
#include <stdint.h>
#include <stddef.h>
#include "CRollcallClientShim.h"
#include "CRollcallLoopTimer.h"
#include "CRollcallLoopWakeup.h"
#include "CRollcallTLS.h"
#include "CRollcallWebhook.h"

/// LWS_PRE is a macro Swift cannot import: the headroom lws needs before a payload.
static const size_t rollcall_lws_pre = LWS_PRE;

/// A sorted-usec-list timer that remembers who owns it, so its callback can find its way
/// back to Swift (lws passes only the `sul` pointer).
typedef struct rollcall_timer {
    lws_sorted_usec_list_t sul;
    void *owner;
} rollcall_timer_t;

/// Recovers the timer from the `sul` pointer lws hands to the callback.
static inline rollcall_timer_t *rollcall_timer_from_sul(lws_sorted_usec_list_t *sul) {
    return lws_container_of(sul, rollcall_timer_t, sul);
}

/// The per-connection user space lws allocates for the broker's protocol: only the key of
/// the Swift-side record (0 = none yet). Kept deliberately tiny.
typedef struct rollcall_pss {
    uint64_t key;
} rollcall_pss_t;

/// `lws_set_timeout`'s "kill at the next service loop" value (a macro Swift cannot import).
static const int rollcall_to_kill_async = LWS_TO_KILL_ASYNC;

/// Writes a complete HTTP response header (status, content type, content length,
/// `Cache-Control: no-store`, then `count` more fields: `names[i]` in lowercase with its
/// trailing colon, e.g. `allow:`, and `values[i]`) for a dynamic body the caller writes next
/// with `LWS_WRITE_HTTP_FINAL`. Returns nonzero on failure (hang up).
int rollcall_http_write_headers(struct lws *wsi, unsigned int status, const char *content_type,
                                size_t content_length, const char *const *names,
                                const char *const *values, int count);

/// Refuses a WebSocket upgrade with a complete `HTTP/1.1` response (status line,
/// `text/plain` body, `Connection: close`) written in one go. Returns nonzero on failure.
/// The caller then hangs up (returns -1 from `LWS_CALLBACK_HTTP_CONFIRM_UPGRADE`).
int rollcall_http_refuse(struct lws *wsi, unsigned int status, const char *reason_phrase, const char *body);

/// Serves a file with lws' own asynchronous file transfer. Same return as `lws_serve_http_file`.
int rollcall_http_serve_file(struct lws *wsi, const char *path, const char *content_type);

/// Copies header `token` into `out` (NUL-terminated); returns its length or -1 if absent/too long.
int rollcall_header(struct lws *wsi, enum lws_token_indexes token, char *out, int capacity);

/// Caps the socket's kernel send buffer (so that a stalled reader shows up in the broker's
/// own outbound queue instead of hiding in megabytes of kernel buffer).
void rollcall_cap_send_buffer(struct lws *wsi, int bytes);

/// The extension list offering `permessage-deflate` (lws' own implementation), for
/// `lws_context_creation_info.extensions`; static, never freed.
const struct lws_extension *rollcall_permessage_deflate_extensions(void);

/// The close-frame write type. lws 4.1 keeps `LWS_WRITE_CLOSE` (4) out of the public enum
/// ("handled by lws_close_reason()"), but `lws_write` frames it like PING/PONG (opcode 0x8).
static const enum lws_write_protocol rollcall_lws_write_close = (enum lws_write_protocol)4;
/// `LWS_WRITE_RAW` (a macro Swift does not import): bytes sent as they are, no frame header;
/// the WebSocket role passes them to `lws_issue_raw`, which keeps what the socket does not take.
static const enum lws_write_protocol rollcall_lws_write_raw = LWS_WRITE_RAW;

/// Half-closes the connection's socket for writing (`shutdown(fd, SHUT_WR)`): what was
/// written is still delivered, then the peer reads EOF. Returns 0 on success.
int rollcall_half_close(struct lws *wsi);

/// How many bytes the application (lws) has read from the connection's TCP socket so far:
/// the kernel's count of bytes received (`TCP_INFO` `tcpi_bytes_received`) less those still
/// waiting in the receive queue (`SIOCINQ`), read until both are stable. -1 when unknown.
/// lws reads from the socket only when its own buffer of earlier input is empty, so an
/// unchanged count means a request head was parsed from bytes lws had already buffered.
long long rollcall_socket_bytes_read(struct lws *wsi);

/// Reads and drops what waits in the socket's receive queue (non-blocking), then half-closes
/// it: before a close that would otherwise answer unread input with a reset.
void rollcall_drain_and_half_close(struct lws *wsi);

/// A stop request that may be set from a signal handler or any thread.
typedef struct rollcall_stop_flag {
    volatile int requested;
} rollcall_stop_flag_t;

/// Sets `flag` and wakes the service loop of `context` (async-signal-safe).
void rollcall_request_stop(struct lws_context *context, rollcall_stop_flag_t *flag);

/// True once a stop was requested.
int rollcall_stop_requested(const rollcall_stop_flag_t *flag);

/// Installs SIGINT/SIGTERM handlers that only call `rollcall_request_stop(context, flag)`.
/// Also ignores SIGPIPE and unblocks SIGINT/SIGTERM on the calling thread. Call again with NULLs
/// to detach (restores the default handlers).
void rollcall_install_stop_signals(struct lws_context *context, rollcall_stop_flag_t *flag);
/// The flag the stop-signal handler sets now (NULL: none installed).
rollcall_stop_flag_t *rollcall_stop_signal_flag(void);

/* Names the calling thread as `top -H`, `ps -L` and debuggers show it (at most 15 bytes;
 * Foundation's Thread.name does not reach the system on Linux). 0, or an errno. */
int rollcall_name_this_thread(const char *name);

#endif
