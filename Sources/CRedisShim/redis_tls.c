// `cluster.tls` loaded into an OpenSSL client context, shared by every link of a node.

#include "CRedisShim.h"
#include "redis_tls.h"

#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

void rollcall_tls_reason(char *error, size_t length, const char *what) {
    unsigned long code = ERR_get_error();
    char reason[200] = "unknown error";
    if (code != 0) ERR_error_string_n(code, reason, sizeof reason);
    ERR_clear_error();
    snprintf(error, length, "%s (%s)", what, reason);
}

rollcall_tls *rollcall_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
                               char *error, size_t error_length) {
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (context == NULL) {
        rollcall_tls_reason(error, error_length, "could not make a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    int loaded = ca_file ? SSL_CTX_load_verify_locations(context, ca_file, NULL)
                         : SSL_CTX_set_default_verify_paths(context);
    if (loaded != 1) {
        rollcall_tls_reason(error, error_length, ca_file ? "cannot load caFile" : "cannot load the system's CA store");
        SSL_CTX_free(context);
        return NULL;
    }
    if (cert_file && SSL_CTX_use_certificate_chain_file(context, cert_file) != 1) {
        rollcall_tls_reason(error, error_length, "cannot load certFile");
        SSL_CTX_free(context);
        return NULL;
    }
    if (key_file && SSL_CTX_use_PrivateKey_file(context, key_file, SSL_FILETYPE_PEM) != 1) {
        int mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
        rollcall_tls_reason(error, error_length, mismatch ? "keyFile does not match certFile" : "cannot load keyFile");
        SSL_CTX_free(context);
        return NULL;
    }
    if (cert_file && key_file && SSL_CTX_check_private_key(context) != 1) {
        rollcall_tls_reason(error, error_length, "keyFile does not match certFile");
        SSL_CTX_free(context);
        return NULL;
    }
    rollcall_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL) {
        SSL_CTX_free(context);
        snprintf(error, error_length, "out of memory");
        return NULL;
    }
    tls->context = context;
    return tls;
}

void rollcall_tls_free(rollcall_tls *tls) {
    if (tls == NULL) return;
    SSL_CTX_free(tls->context);
    free(tls);
}
