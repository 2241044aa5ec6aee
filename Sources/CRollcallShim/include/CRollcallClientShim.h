#ifndef CROLLCALL_CLIENT_SHIM_H
#define CROLLCALL_CLIENT_SHIM_H

#include <libwebsockets.h>

/// Raises this process's soft open-file limit to at least `wanted` (capped at the hard
/// limit). Returns the soft limit in effect afterwards.
unsigned long rollcall_client_raise_fd_limit(unsigned long wanted);

/// Ends a client connection's TCP stream without a WebSocket close frame (both directions
/// shut down); lws notices the hang-up on its next service pass and closes the wsi.
/// Returns 0 on success, -1 when the connection has no socket.
int rollcall_client_drop_socket(struct lws *wsi);

/// The extension list every client runtime's context carries (`lws_context_creation_info.extensions`):
/// lws' own `permessage-deflate`, offered as `permessage-deflate; client_max_window_bits`.
/// Static, never freed: lws keeps the pointer for the context's lifetime and walks it on every
/// handshake. A connection that does not want compression declines it per handshake in
/// `LWS_CALLBACK_CLIENT_CONFIRM_EXTENSION_SUPPORTED`.
const struct lws_extension *rollcall_client_extensions(void);

/// Copies the `Sec-WebSocket-Extensions` header of the server's upgrade response into `out`
/// (NUL-terminated). Valid in `LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH` (lws drops the headers
/// before `ESTABLISHED`). Returns its length, 0 when absent, -1 when longer than `capacity - 1`.
int rollcall_client_accepted_extensions(struct lws *wsi, char *out, int capacity);

/// Ignores SIGPIPE so that writing to a socket the peer closed reports an error instead
/// of killing the process.
void rollcall_client_ignore_sigpipe(void);

#endif
