#ifndef CROLLCALL_TLS_H
#define CROLLCALL_TLS_H

#include <stddef.h>

/// What `rollcall_tls_check_pem` found wrong (0: nothing).
typedef enum rollcall_tls_problem {
    ROLLCALL_TLS_OK = 0,
    /// The certificate file holds no PEM certificate OpenSSL can parse.
    ROLLCALL_TLS_BAD_CERTIFICATE = 1,
    /// The key file holds no PEM private key OpenSSL can parse (or it is encrypted).
    ROLLCALL_TLS_BAD_KEY = 2,
    /// The key is not the private key of the (first) certificate.
    ROLLCALL_TLS_KEY_MISMATCH = 3,
} rollcall_tls_problem_t;

/// Parses a PEM certificate chain and a PEM private key from memory with the same TLS
/// library libwebsockets uses, and checks that the key belongs to the first certificate.
/// An encrypted key is refused (the broker has no way to ask for a pass phrase).
/// On a problem, writes OpenSSL's reason (NUL-terminated, possibly empty) into `detail`.
rollcall_tls_problem_t rollcall_tls_check_pem(const void *certificate, size_t certificate_length,
                                              const void *key, size_t key_length,
                                              char *detail, size_t detail_capacity);

#endif
