#ifndef CREDISSHIM_H
#define CREDISSHIM_H

// The Redis client's transport: one non-blocking TCP socket per link, optionally wrapped in
// OpenSSL, driven by one libev io watcher on the broker's loop (docs/cluster.md, "The Redis
// client's transport"). hiredis is used only to format commands (RESP) and to parse replies
// (its reader); its async layer, which cannot do TLS in Debian's 0.14, is not used.
// Everything here runs on the loop's thread.

#include <stddef.h>
#include <hiredis/hiredis.h>

/// Why a link failed (the `code` of `rollcall_link_failed_fn`).
enum rollcall_link_failure {
    /// The TCP connection could not be made.
    ROLLCALL_LINK_CONNECT_FAILED = 1,
    /// The connection was closed by Redis or reset.
    ROLLCALL_LINK_LOST = 2,
    /// The server's certificate did not verify (chain or name).
    ROLLCALL_LINK_TLS_VERIFY_FAILED = 3,
    /// The TLS handshake failed for another reason (protocol, alert, client certificate refused).
    ROLLCALL_LINK_TLS_HANDSHAKE_FAILED = 4,
    /// Redis sent bytes that are not RESP.
    ROLLCALL_LINK_PROTOCOL_ERROR = 5,
};

/// A TLS client configuration (an `SSL_CTX`), shared by every link of a Redis client.
typedef struct rollcall_tls rollcall_tls;
/// One connection to Redis.
typedef struct rollcall_link rollcall_link;

/// One reply, in order; hiredis frees `reply` after the call returns.
typedef void rollcall_link_reply_fn(void *owner, redisReply *reply);
/// The link failed (once; never after `rollcall_link_close`): `code` is a `rollcall_link_failure`.
typedef void rollcall_link_failed_fn(void *owner, int code, const char *message);

/// A TLS client configuration: the server's certificate is verified against `ca_file` (PEM),
/// or the system's store when NULL; `cert_file` and `key_file` (PEM, both or neither) are the
/// client's certificate for mutual TLS. NULL with the reason in `error` when a file cannot be
/// read or the key does not match the certificate.
rollcall_tls *rollcall_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
                               char *error, size_t error_length);
/// Frees a configuration (after every link that uses it is closed).
void rollcall_tls_free(rollcall_tls *tls);

/// Starts a non-blocking connect to the numeric address `host`:`port` on `loop` (a
/// `struct ev_loop *`); with `tls`, a TLS handshake follows whose certificate must name
/// `server_name` (a DNS name, or an IP address checked against the IP SANs). Commands sent
/// meanwhile are written once the link is up. NULL on an immediate failure, with the reason
/// in `error`.
rollcall_link *rollcall_link_open(void *loop, const char *host, int port, rollcall_tls *tls,
                                  const char *server_name, void *owner,
                                  rollcall_link_reply_fn *on_reply, rollcall_link_failed_fn *on_failed,
                                  char *error, size_t error_length);

/// Queues one command (binary-safe arguments), written on the loop's next turn together with
/// the others queued in the same turn. 0 when queued, -1 when the link has failed.
int rollcall_link_send(rollcall_link *link, int argc, const char **argv, const size_t *argvlen);

/// Closes the link: no callback follows. Safe inside one of the link's own callbacks (the
/// memory is then freed when the callback returns).
void rollcall_link_close(rollcall_link *link);

#endif
