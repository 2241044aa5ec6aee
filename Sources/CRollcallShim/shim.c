#include "CRollcallShim.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's is older) */
#include <linux/sockios.h>

int rollcall_http_write_headers(struct lws *wsi, unsigned int status, const char *content_type,
                                size_t content_length, const char *const *names,
                                const char *const *values, int count) {
    unsigned char buffer[LWS_PRE + 1024];
    unsigned char *start = &buffer[LWS_PRE];
    unsigned char *p = start;
    unsigned char *end = &buffer[sizeof(buffer) - 1];
    if (lws_add_http_common_headers(wsi, status, content_type, (lws_filepos_t)content_length, &p, end))
        return 1;
    if (lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)"no-store", 8, &p, end))
        return 1;
    for (int i = 0; i < count; i++) {
        if (lws_add_http_header_by_name(wsi, (const unsigned char *)names[i], (const unsigned char *)values[i],
                                        (int)strlen(values[i]), &p, end))
            return 1;
    }
    if (lws_finalize_write_http_header(wsi, start, &p, end))
        return 1;
    return 0;
}

int rollcall_http_refuse(struct lws *wsi, unsigned int status, const char *reason_phrase, const char *body) {
    unsigned char buffer[LWS_PRE + 512];
    char *start = (char *)&buffer[LWS_PRE];
    size_t room = sizeof(buffer) - LWS_PRE;
    int length = snprintf(start, room,
                          "HTTP/1.1 %u %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
                          "content-length: %zu\r\nconnection: close\r\n\r\n%s",
                          status, reason_phrase, strlen(body), body);
    if (length < 0 || (size_t)length >= room)
        return 1;
    return lws_write(wsi, (unsigned char *)start, (size_t)length, LWS_WRITE_HTTP_HEADERS) != length;
}

int rollcall_http_serve_file(struct lws *wsi, const char *path, const char *content_type) {
    return lws_serve_http_file(wsi, path, content_type, NULL, 0);
}

int rollcall_header(struct lws *wsi, enum lws_token_indexes token, char *out, int capacity) {
    int length = lws_hdr_total_length(wsi, token);
    if (length <= 0 || length >= capacity)
        return -1;
    if (lws_hdr_copy(wsi, out, capacity, token) < 0)
        return -1;
    return length;
}

void rollcall_cap_send_buffer(struct lws *wsi, int bytes) {
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    if (fd < 0)
        return;
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

static const struct lws_extension rollcall_extensions[] = {
    {"permessage-deflate", lws_extension_callback_pm_deflate,
     "permessage-deflate; client_max_window_bits"},
    {NULL, NULL, NULL},
};

const struct lws_extension *rollcall_permessage_deflate_extensions(void) {
    return rollcall_extensions;
}

int rollcall_half_close(struct lws *wsi) {
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    if (fd < 0)
        return -1;
    return shutdown(fd, SHUT_WR);
}

long long rollcall_socket_bytes_read(struct lws *wsi) {
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    if (fd < 0)
        return -1;
    for (int attempt = 0; attempt < 8; attempt++) {
        int before = 0, after = 0;
        struct tcp_info info;
        socklen_t size = sizeof(info);
        memset(&info, 0, sizeof(info));
        if (ioctl(fd, SIOCINQ, &before) != 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0 ||
            ioctl(fd, SIOCINQ, &after) != 0)
            return -1;
        if (size < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received))
            return -1;
        if (before == after) // no input arrived between the two reads
            return (long long)info.tcpi_bytes_received - after;
    }
    return -1;
}

void rollcall_drain_and_half_close(struct lws *wsi) {
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    if (fd < 0)
        return;
    unsigned char sink[4096];
    for (int rounds = 0; rounds < 64 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; rounds++) {
    }
    (void)shutdown(fd, SHUT_WR);
}

void rollcall_request_stop(struct lws_context *context, rollcall_stop_flag_t *flag) {
    if (flag)
        __atomic_store_n(&flag->requested, 1, __ATOMIC_SEQ_CST);
    if (context)
        lws_cancel_service(context);
}

int rollcall_stop_requested(const rollcall_stop_flag_t *flag) {
    return __atomic_load_n(&flag->requested, __ATOMIC_SEQ_CST);
}

static struct lws_context *volatile signal_context;
static rollcall_stop_flag_t *volatile signal_flag;

static void on_stop_signal(int signal_number) {
    (void)signal_number;
    rollcall_request_stop(signal_context, signal_flag);
}

rollcall_stop_flag_t *rollcall_stop_signal_flag(void) {
    return signal_flag;
}

void rollcall_install_stop_signals(struct lws_context *context, rollcall_stop_flag_t *flag) {
    signal_context = context;
    signal_flag = flag;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = (context || flag) ? on_stop_signal : SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (context || flag) {
        /* A mask inherited from the parent survives exec; a blocked SIGTERM would never stop us. */
        sigset_t stop_signals;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
    }
}
