#define _GNU_SOURCE
#include "CRollcallLoopWakeup.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <ev.h>

// libev's three functions the wake-ups call, looked up in the process (where `EventLoop`
// loaded libev) once.
static struct {
    void (*async_start)(struct ev_loop *, ev_async *);
    void (*async_stop)(struct ev_loop *, ev_async *);
    void (*async_send)(struct ev_loop *, ev_async *);
} libev;
static pthread_once_t libev_once = PTHREAD_ONCE_INIT;

static void rollcall_look_up_libev_async(void) {
    libev.async_start = (void (*)(struct ev_loop *, ev_async *))dlsym(RTLD_DEFAULT, "ev_async_start");
    libev.async_stop = (void (*)(struct ev_loop *, ev_async *))dlsym(RTLD_DEFAULT, "ev_async_stop");
    libev.async_send = (void (*)(struct ev_loop *, ev_async *))dlsym(RTLD_DEFAULT, "ev_async_send");
}

struct rollcall_loop_wakeup {
    ev_async watcher;
    struct ev_loop *loop;
    rollcall_loop_wakeup_fn fire;
    void *owner;
};

static void rollcall_loop_wakeup_fired(struct ev_loop *loop, ev_async *watcher, int revents) {
    (void)loop;
    (void)revents;
    rollcall_loop_wakeup *wakeup = (rollcall_loop_wakeup *)watcher->data;
    wakeup->fire(wakeup->owner);
}

rollcall_loop_wakeup *rollcall_loop_wakeup_create(void *loop, rollcall_loop_wakeup_fn fire, void *owner) {
    pthread_once(&libev_once, rollcall_look_up_libev_async);
    if (libev.async_start == NULL || libev.async_stop == NULL || libev.async_send == NULL) return NULL;
    rollcall_loop_wakeup *wakeup = calloc(1, sizeof(*wakeup));
    if (wakeup == NULL) return NULL;
    wakeup->loop = (struct ev_loop *)loop;
    wakeup->fire = fire;
    wakeup->owner = owner;
    ev_async_init(&wakeup->watcher, rollcall_loop_wakeup_fired);
    wakeup->watcher.data = wakeup;
    libev.async_start(wakeup->loop, &wakeup->watcher);
    return wakeup;
}

void rollcall_loop_wakeup_signal(rollcall_loop_wakeup *wakeup) {
    libev.async_send(wakeup->loop, &wakeup->watcher);
}

void rollcall_loop_wakeup_destroy(rollcall_loop_wakeup *wakeup) {
    if (wakeup == NULL) return;
    libev.async_stop(wakeup->loop, &wakeup->watcher);
    free(wakeup);
}
