#ifndef ROLLCALL_REDIS_TLS_H
#define ROLLCALL_REDIS_TLS_H

// Private to CRedisShim: what the transport needs of a TLS configuration.

#include <stddef.h>
#include <openssl/ssl.h>

struct rollcall_tls {
    SSL_CTX *context;
};

/// "`what` (OpenSSL's first queued error)" into `error`; clears the queue.
void rollcall_tls_reason(char *error, size_t length, const char *what);

#endif
