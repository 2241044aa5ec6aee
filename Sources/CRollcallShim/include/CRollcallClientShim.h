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

/// Ignores SIGPIPE so that writing to a socket the peer closed reports an error instead
/// of killing the process.
void rollcall_client_ignore_sigpipe(void);

#endif
