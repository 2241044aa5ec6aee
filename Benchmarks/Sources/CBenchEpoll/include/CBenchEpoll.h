#ifndef C_BENCH_EPOLL_H
#define C_BENCH_EPOLL_H

/// epoll for the bench's raw client sockets (`epoll_event` is a packed struct with a union,
/// which Swift does not import usably): a set, add/remove for reading, and a wait that
/// returns the ready descriptors.

/// A new epoll set (close-on-exec); -1 on failure.
int bench_epoll_create(void);
/// Watches `fd` for input and peer hang-up; 0 on success.
int bench_epoll_add(int epoll, int fd);
/// Stops watching `fd`.
int bench_epoll_remove(int epoll, int fd);
/// Waits up to `timeout_ms` and stores at most `max` ready descriptors in `fds`; returns how
/// many (0 on timeout or interruption).
int bench_epoll_wait(int epoll, int *fds, int max, int timeout_ms);

#endif
