#include "CRollcallTLS.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string.h>

/// Refuses to prompt for a pass phrase (OpenSSL's default would read the terminal).
static int no_pass_phrase(char *buffer, int size, int rwflag, void *user) {
    (void)buffer; (void)size; (void)rwflag; (void)user;
    return -1;
}

static void take_reason(char *detail, size_t capacity) {
    if (!detail || capacity == 0)
        return;
    detail[0] = '\0';
    unsigned long code = ERR_peek_last_error();
    if (code) {
        const char *reason = ERR_reason_error_string(code);
        if (reason) {
            strncpy(detail, reason, capacity - 1);
            detail[capacity - 1] = '\0';
        }
    }
    ERR_clear_error();
}

rollcall_tls_problem_t rollcall_tls_check_pem(const void *certificate, size_t certificate_length,
                                              const void *key, size_t key_length,
                                              char *detail, size_t detail_capacity) {
    if (detail && detail_capacity)
        detail[0] = '\0';
    ERR_clear_error();

    BIO *bio = BIO_new_mem_buf(certificate, (int)certificate_length);
    X509 *x509 = bio ? PEM_read_bio_X509(bio, NULL, no_pass_phrase, NULL) : NULL;
    BIO_free(bio);
    if (!x509) {
        take_reason(detail, detail_capacity);
        return ROLLCALL_TLS_BAD_CERTIFICATE;
    }

    bio = BIO_new_mem_buf(key, (int)key_length);
    EVP_PKEY *pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_pass_phrase, NULL) : NULL;
    BIO_free(bio);
    if (!pkey) {
        take_reason(detail, detail_capacity);
        X509_free(x509);
        return ROLLCALL_TLS_BAD_KEY;
    }

    int matches = X509_check_private_key(x509, pkey);
    if (!matches)
        take_reason(detail, detail_capacity);
    EVP_PKEY_free(pkey);
    X509_free(x509);
    ERR_clear_error();
    return matches ? ROLLCALL_TLS_OK : ROLLCALL_TLS_KEY_MISMATCH;
}
