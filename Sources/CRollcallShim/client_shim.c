#include "CRollcallClientShim.h"
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>

unsigned long rollcall_client_raise_fd_limit(unsigned long wanted) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur >= wanted) return (unsigned long)limit.rlim_cur;
    rlim_t target = wanted;
    if (limit.rlim_max != RLIM_INFINITY && target > limit.rlim_max) target = limit.rlim_max;
    limit.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    return (unsigned long)limit.rlim_cur;
}

int rollcall_client_drop_socket(struct lws *wsi) {
    lws_sockfd_type fd = lws_get_socket_fd(wsi);
    if (fd < 0) return -1;
    /* FIN, not RST: the broker sees a plain EOF without a close frame */
    return shutdown(fd, SHUT_RDWR);
}

void rollcall_client_ignore_sigpipe(void) {
    signal(SIGPIPE, SIG_IGN);
}

static const struct lws_extension client_extensions[] = {
    {"permessage-deflate", lws_extension_callback_pm_deflate, "permessage-deflate; client_max_window_bits"},
    {NULL, NULL, NULL},
};

const struct lws_extension *rollcall_client_extensions(void) {
    return client_extensions;
}

int rollcall_client_accepted_extensions(struct lws *wsi, char *out, int capacity) {
    int length = lws_hdr_total_length(wsi, WSI_TOKEN_EXTENSIONS);
    if (capacity > 0)
        out[0] = '\0';
    if (length <= 0)
        return 0;
    if (length >= capacity || lws_hdr_copy(wsi, out, capacity, WSI_TOKEN_EXTENSIONS) < 0)
        return -1;
    return length;
}
