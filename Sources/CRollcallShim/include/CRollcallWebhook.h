#ifndef CROLLCALL_WEBHOOK_H
#define CROLLCALL_WEBHOOK_H

#include <libwebsockets.h>
#include <stddef.h>

/// Appends the webhook POST's own headers (`Content-Type: application/json`,
/// `Content-Length`, `Rollcall-Signature`) at `*p` during
/// `LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER`: `in` is that callback's `in` (a `char **`
/// lws advances) and `room` its `len`. Returns nonzero when they do not fit.
int rollcall_webhook_append_headers(void *in, size_t room, const char *signature, size_t content_length);

/// `PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE`, for extending lws' own wait for an answer to
/// `webhooks.timeoutSeconds` (lws arms it with the context's `timeout_secs`).
static const int rollcall_timeout_awaiting_server_response = PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE;

#endif
