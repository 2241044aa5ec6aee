#include "CBenchEpoll.h"

#include <stddef.h>
#include <sys/epoll.h>

int bench_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int bench_epoll_add(int epoll, int fd) {
    struct epoll_event event = {0};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = fd;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

int bench_epoll_remove(int epoll, int fd) {
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
}

int bench_epoll_wait(int epoll, int *fds, int max, int timeout_ms) {
    struct epoll_event events[256];
    if (max > 256) max = 256;
    int ready = epoll_wait(epoll, events, max, timeout_ms);
    if (ready < 0) return 0;
    for (int i = 0; i < ready; i++) fds[i] = events[i].data.fd;
    return ready;
}
