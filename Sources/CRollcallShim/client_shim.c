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
