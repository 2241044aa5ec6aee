#include "CRedisShim.h"
#include "redis_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>



enum link_phase { CONNECTING, HANDSHAKING, OPEN, FAILED };

struct rollcall_link {
    struct ev_loop *loop;
    ev_io watcher;
    int fd;
    int events;            // what `watcher` waits for now (0: stopped)
    enum link_phase phase;
    SSL *ssl;              // NULL on a plain link
    redisReader *reader;
    char *out;             // bytes queued for Redis: out[sent..length)
    size_t length, sent, capacity;
    void *owner;
    rollcall_link_reply_fn *on_reply;
    rollcall_link_failed_fn *on_failed;
    int depth;             // callbacks in progress
    int doomed;            // closed inside a callback: free once it returns
    char peer[80];         // host:port, for messages
};

// MARK: The link's life

static void link_free(rollcall_link *link) {
    if (link->events) ev_io_stop(link->loop, &link->watcher);
    if (link->ssl) SSL_free(link->ssl);
    if (link->fd >= 0) close(link->fd);
    if (link->reader) redisReaderFree(link->reader);
    free(link->out);
    free(link);
}

/// Waits for `events` (EV_READ, EV_WRITE or both; 0 stops the watcher).
static void link_watch(rollcall_link *link, int events) {
    if (events == link->events) return;
    if (link->events) ev_io_stop(link->loop, &link->watcher);
    link->events = events;
    if (events) {
        ev_io_set(&link->watcher, link->fd, events);
        ev_io_start(link->loop, &link->watcher);
    }
}

/// Fails the link once: stops its watcher, tells the owner. False afterwards (the caller returns).
static void link_fail(rollcall_link *link, int code, const char *message) {
    if (link->phase == FAILED) return;
    link->phase = FAILED;
    link_watch(link, 0);
    if (link->doomed) return;
    link->depth++;
    link->on_failed(link->owner, code, message);
    link->depth--;
}

/// True when the owner closed the link in the callback that just returned (it is freed here).
static int link_reap(rollcall_link *link) {
    if (link->depth > 0 || !link->doomed) return 0;
    link_free(link);
    return 1;
}

static void link_fail_errno(rollcall_link *link, int code, const char *what, int number) {
    char message[256];
    snprintf(message, sizeof message, "%s %s: %s", what, link->peer, strerror(number));
    link_fail(link, code, message);
}

/// Why a TLS call failed, as a message and a failure code.
static int tls_failure(rollcall_link *link, int result, const char *what, char *message, size_t length) {
    int kind = SSL_get_error(link->ssl, result);
    long verified = SSL_get_verify_result(link->ssl);
    if (link->phase == HANDSHAKING && verified != X509_V_OK) {
        snprintf(message, length, "the certificate of Redis at %s does not verify: %s", link->peer,
                 X509_verify_cert_error_string(verified));
        ERR_clear_error();
        return ROLLCALL_LINK_TLS_VERIFY_FAILED;
    }
    unsigned long code = ERR_get_error();
    char reason[200];
    if (code != 0) ERR_error_string_n(code, reason, sizeof reason);
    else if (kind == SSL_ERROR_SYSCALL && errno != 0) snprintf(reason, sizeof reason, "%s", strerror(errno));
    else if (kind == SSL_ERROR_ZERO_RETURN || kind == SSL_ERROR_SYSCALL) snprintf(reason, sizeof reason, "connection closed");
    else snprintf(reason, sizeof reason, "TLS error %d", kind);
    ERR_clear_error();
    snprintf(message, length, "%s %s: %s", what, link->peer, reason);
    return link->phase == HANDSHAKING ? ROLLCALL_LINK_TLS_HANDSHAKE_FAILED : ROLLCALL_LINK_LOST;
}

// MARK: Writing

/// Writes what is queued; 0 when all of it went or the socket is full, -1 when the link failed.
static int link_flush(rollcall_link *link) {
    while (link->sent < link->length) {
        size_t left = link->length - link->sent;
        if (link->ssl) {
            ERR_clear_error();
            int written = SSL_write(link->ssl, link->out + link->sent, left > 0x40000000 ? 0x40000000 : (int)left);
            if (written <= 0) {
                int kind = SSL_get_error(link->ssl, written);
                if (kind == SSL_ERROR_WANT_WRITE || kind == SSL_ERROR_WANT_READ) return 0;
                char message[320];
                int code = tls_failure(link, written, "write to", message, sizeof message);
                link_fail(link, code, message);
                return -1;
            }
            link->sent += (size_t)written;
        } else {
            ssize_t written = send(link->fd, link->out + link->sent, left, MSG_NOSIGNAL);
            if (written < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                if (errno == EINTR) continue;
                link_fail_errno(link, ROLLCALL_LINK_LOST, "write to", errno);
                return -1;
            }
            link->sent += (size_t)written;
        }
    }
    link->sent = link->length = 0;
    return 0;
}

// MARK: Reading

/// Hands every complete reply to the owner; -1 when the link failed or was closed meanwhile.
static int link_deliver(rollcall_link *link) {
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(link->reader, &reply) != REDIS_OK) {
            char message[256];
            snprintf(message, sizeof message, "Redis at %s sent a malformed reply: %s", link->peer, link->reader->errstr);
            link_fail(link, ROLLCALL_LINK_PROTOCOL_ERROR, message);
            return -1;
        }
        if (reply == NULL) return 0;
        link->depth++;
        link->on_reply(link->owner, reply);
        link->depth--;
        freeReplyObject(reply);
        if (link->doomed || link->phase == FAILED) return -1;
    }
}

/// Reads what arrived and delivers the replies; -1 when the link failed or was closed meanwhile.
static int link_read(rollcall_link *link) {
    char buffer[16384];
    for (;;) {
        ssize_t count;
        if (link->ssl) {
            ERR_clear_error();
            int got = SSL_read(link->ssl, buffer, sizeof buffer);
            if (got <= 0) {
                int kind = SSL_get_error(link->ssl, got);
                if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) return 0;
                char message[320];
                int code = tls_failure(link, got, "read from", message, sizeof message);
                if (kind == SSL_ERROR_ZERO_RETURN) snprintf(message, sizeof message, "connection closed by Redis at %s", link->peer);
                link_fail(link, code, message);
                return -1;
            }
            count = got;
        } else {
            count = recv(link->fd, buffer, sizeof buffer, 0);
            if (count < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                if (errno == EINTR) continue;
                link_fail_errno(link, ROLLCALL_LINK_LOST, "read from", errno);
                return -1;
            }
            if (count == 0) {
                char message[160];
                snprintf(message, sizeof message, "connection closed by Redis at %s", link->peer);
                link_fail(link, ROLLCALL_LINK_LOST, message);
                return -1;
            }
        }
        if (redisReaderFeed(link->reader, buffer, (size_t)count) != REDIS_OK) {
            link_fail(link, ROLLCALL_LINK_PROTOCOL_ERROR, "the reply reader failed");
            return -1;
        }
        if (link_deliver(link) != 0) return -1;
        // A plain read that did not fill the buffer emptied the socket.
        if (!link->ssl && (size_t)count < sizeof buffer) return 0;
    }
}

// MARK: Events

/// Watches for what the link needs next: replies always, the socket's room while bytes wait.
static void link_rearm(rollcall_link *link) {
    if (link->phase != OPEN) return;
    link_watch(link, EV_READ | (link->sent < link->length ? EV_WRITE : 0));
}

static void link_handshake(rollcall_link *link) {
    ERR_clear_error();
    int result = SSL_do_handshake(link->ssl);
    if (result == 1) {
        link->phase = OPEN;
        return;
    }
    int kind = SSL_get_error(link->ssl, result);
    if (kind == SSL_ERROR_WANT_READ) { link_watch(link, EV_READ); return; }
    if (kind == SSL_ERROR_WANT_WRITE) { link_watch(link, EV_WRITE); return; }
    char message[320];
    int code = tls_failure(link, result, "TLS handshake with", message, sizeof message);
    link_fail(link, code, message);
}

static void link_connected(rollcall_link *link) {
    int failure = 0;
    socklen_t size = sizeof failure;
    if (getsockopt(link->fd, SOL_SOCKET, SO_ERROR, &failure, &size) != 0) failure = errno;
    if (failure != 0) {
        link_fail_errno(link, ROLLCALL_LINK_CONNECT_FAILED, "connect to", failure);
        return;
    }
    link->phase = link->ssl ? HANDSHAKING : OPEN;
}

static void link_event(struct ev_loop *loop, ev_io *watcher, int revents) {
    (void)loop;
    rollcall_link *link = watcher->data;
    if (link->phase == CONNECTING) {
        link_connected(link);
        if (link->phase == FAILED) { link_reap(link); return; }
    }
    if (link->phase == HANDSHAKING) {
        link_handshake(link);
        if (link->phase != OPEN) { link_reap(link); return; }
        revents |= EV_READ | EV_WRITE;  // TLS may hold early data; the queue waits
    }
    if (link->phase != OPEN) return;
    if ((revents & EV_WRITE) || link->ssl) {
        if (link_flush(link) != 0) { link_reap(link); return; }
    }
    if ((revents & EV_READ) || link->ssl) {
        if (link_read(link) != 0) { link_reap(link); return; }
    }
    link_rearm(link);
}

// MARK: API

rollcall_link *rollcall_link_open(void *loop, const char *host, int port, rollcall_tls *tls,
                                  const char *server_name, void *owner,
                                  rollcall_link_reply_fn *on_reply, rollcall_link_failed_fn *on_failed,
                                  char *error, size_t error_length) {
    struct sockaddr_storage address;
    socklen_t address_length;
    memset(&address, 0, sizeof address);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        address_length = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        address_length = sizeof *v6;
    } else {
        snprintf(error, error_length, "%s is not a numeric address", host);
        return NULL;
    }
    rollcall_link *link = calloc(1, sizeof *link);
    if (link == NULL) {
        snprintf(error, error_length, "out of memory");
        return NULL;
    }
    link->fd = -1;
    link->loop = loop;
    link->owner = owner;
    link->on_reply = on_reply;
    link->on_failed = on_failed;
    snprintf(link->peer, sizeof link->peer, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    link->reader = redisReaderCreate();
    if (link->reader == NULL) {
        snprintf(error, error_length, "out of memory");
        link_free(link);
        return NULL;
    }
    link->fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (link->fd < 0) {
        snprintf(error, error_length, "socket: %s", strerror(errno));
        link_free(link);
        return NULL;
    }
    int on = 1;
    setsockopt(link->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    // Lets the kernel notice a peer that vanished without a FIN (the watchdog and the probe
    // notice it sooner; this only frees the socket in the end). hiredis' values.
    int idle = 15, interval = 5, probes = 3;
    setsockopt(link->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(link->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(link->fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(link->fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    if (tls) {
        link->ssl = SSL_new(tls->context);
        if (link->ssl == NULL || SSL_set_fd(link->ssl, link->fd) != 1) {
            rollcall_tls_reason(error, error_length, "could not start TLS");
            link_free(link);
            return NULL;
        }
        SSL_set_connect_state(link->ssl);
        const char *name = server_name ? server_name : host;
        unsigned char ip[16];
        int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
        int named = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(link->ssl), name)
                          : (SSL_set_tlsext_host_name(link->ssl, name) == 1 && SSL_set1_host(link->ssl, name) == 1);
        if (!named) {
            rollcall_tls_reason(error, error_length, "could not set the server name to check");
            link_free(link);
            return NULL;
        }
    }
    if (connect(link->fd, (struct sockaddr *)&address, address_length) != 0 && errno != EINPROGRESS) {
        snprintf(error, error_length, "connect to %s: %s", link->peer, strerror(errno));
        link_free(link);
        return NULL;
    }
    link->phase = CONNECTING;
    ev_io_init(&link->watcher, link_event, link->fd, EV_WRITE);
    link->watcher.data = link;
    ev_io_start(link->loop, &link->watcher);
    link->events = EV_WRITE;
    return link;
}

int rollcall_link_send(rollcall_link *link, int argc, const char **argv, const size_t *argvlen) {
    if (link->phase == FAILED || link->doomed) return -1;
    char *command = NULL;
    int length = redisFormatCommandArgv(&command, argc, argv, argvlen);
    if (length < 0 || command == NULL) return -1;
    if (link->sent > 0 && link->sent == link->length) link->sent = link->length = 0;
    if (link->length + (size_t)length > link->capacity) {
        size_t capacity = link->capacity ? link->capacity : 4096;
        while (capacity < link->length + (size_t)length) capacity *= 2;
        char *grown = realloc(link->out, capacity);
        if (grown == NULL) {
            free(command);
            return -1;
        }
        link->out = grown;
        link->capacity = capacity;
    }
    memcpy(link->out + link->length, command, (size_t)length);
    link->length += (size_t)length;
    free(command);
    link_rearm(link);
    return 0;
}

void rollcall_link_close(rollcall_link *link) {
    if (link == NULL || link->doomed) return;
    link->doomed = 1;
    link_watch(link, 0);
    if (link->depth == 0) link_free(link);
}
