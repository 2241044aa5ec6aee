#define _GNU_SOURCE
#include "CRollcallLoopTimer.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <ev.h>

// libev's three functions the timers call (the rest of `ev.h` used here is macros on the
// watcher's fields). Looked up in the process, where `EventLoop` loaded libev, once.
static struct {
    void (*timer_start)(struct ev_loop *, ev_timer *);
    void (*timer_stop)(struct ev_loop *, ev_timer *);
    ev_tstamp (*now)(struct ev_loop *);
} libev;
static pthread_once_t libev_once = PTHREAD_ONCE_INIT;

static void rollcall_look_up_libev(void) {
    libev.timer_start = (void (*)(struct ev_loop *, ev_timer *))dlsym(RTLD_DEFAULT, "ev_timer_start");
    libev.timer_stop = (void (*)(struct ev_loop *, ev_timer *))dlsym(RTLD_DEFAULT, "ev_timer_stop");
    libev.now = (ev_tstamp (*)(struct ev_loop *))dlsym(RTLD_DEFAULT, "ev_now");
}

static int rollcall_libev_loaded(void) {
    pthread_once(&libev_once, rollcall_look_up_libev);
    return libev.timer_start != NULL && libev.timer_stop != NULL && libev.now != NULL;
}

struct rollcall_loop_timer {
    ev_timer watcher;
    struct ev_loop *loop;
    rollcall_loop_timer_fn fire;
    void *owner;
};

static void rollcall_loop_timer_fired(struct ev_loop *loop, ev_timer *watcher, int revents) {
    (void)loop;
    (void)revents;
    rollcall_loop_timer *timer = (rollcall_loop_timer *)watcher->data;
    timer->fire(timer->owner);
}

rollcall_loop_timer *rollcall_loop_timer_create(void *loop, rollcall_loop_timer_fn fire, void *owner) {
    if (!rollcall_libev_loaded()) return NULL;
    rollcall_loop_timer *timer = calloc(1, sizeof(*timer));
    if (timer == NULL) return NULL;
    timer->loop = (struct ev_loop *)loop;
    timer->fire = fire;
    timer->owner = owner;
    ev_timer_init(&timer->watcher, rollcall_loop_timer_fired, 0., 0.);
    timer->watcher.data = timer;
    return timer;
}

void rollcall_loop_timer_schedule(rollcall_loop_timer *timer, double seconds) {
    libev.timer_stop(timer->loop, &timer->watcher);
    ev_timer_set(&timer->watcher, seconds < 0 ? 0. : seconds, 0.);
    libev.timer_start(timer->loop, &timer->watcher);
}

void rollcall_loop_timer_cancel(rollcall_loop_timer *timer) {
    libev.timer_stop(timer->loop, &timer->watcher);
}

int rollcall_loop_timer_is_scheduled(const rollcall_loop_timer *timer) {
    return ev_is_active(&timer->watcher);
}

void rollcall_loop_timer_destroy(rollcall_loop_timer *timer) {
    if (timer == NULL) return;
    libev.timer_stop(timer->loop, &timer->watcher);
    free(timer);
}

double rollcall_loop_now(void *loop) {
    if (!rollcall_libev_loaded()) return 0;
    return libev.now((struct ev_loop *)loop);
}
