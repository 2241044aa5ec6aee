#include "CRedisShim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ev.h>
#include <hiredis/adapters/libev.h>

redisAsyncContext *rollcall_redis_connect(void *loop, const char *host, int port, void *owner,
                                          redisConnectCallback *onConnect,
                                          redisDisconnectCallback *onDisconnect,
                                          char *error, size_t errorLength) {
    redisAsyncContext *ac = redisAsyncConnect(host, port);
    if (ac == NULL) {
        snprintf(error, errorLength, "out of memory");
        return NULL;
    }
    if (ac->err) {
        snprintf(error, errorLength, "%s", ac->errstr);
        redisAsyncFree(ac);
        return NULL;
    }
    // Lets the kernel notice a peer that vanished without a FIN (the watchdog and the probe
    // notice it sooner; this only frees the socket in the end).
    redisEnableKeepAlive(&ac->c);
    if (redisLibevAttach((struct ev_loop *)loop, ac) != REDIS_OK) {
        snprintf(error, errorLength, "could not attach to the event loop");
        redisAsyncFree(ac);
        return NULL;
    }
    ac->data = owner;
    redisAsyncSetConnectCallback(ac, onConnect);
    redisAsyncSetDisconnectCallback(ac, onDisconnect);
    return ac;
}

void rollcall_redis_quiesce(redisAsyncContext *ac) {
    if (ac->ev.delRead) ac->ev.delRead(ac->ev.data);
    if (ac->ev.delWrite) ac->ev.delWrite(ac->ev.data);
}

void *rollcall_redis_owner(const redisAsyncContext *ac) {
    return ac->data;
}

struct rollcall_redis_timer {
    ev_timer watcher;
    struct ev_loop *loop;
    rollcall_redis_timer_fn fire;
    void *owner;
};

static void rollcall_redis_timer_fired(struct ev_loop *loop, ev_timer *watcher, int revents) {
    (void)loop;
    (void)revents;
    rollcall_redis_timer *timer = (rollcall_redis_timer *)watcher->data;
    timer->fire(timer->owner);
}

rollcall_redis_timer *rollcall_redis_timer_create(void *loop, rollcall_redis_timer_fn fire, void *owner) {
    rollcall_redis_timer *timer = calloc(1, sizeof(*timer));
    if (timer == NULL) return NULL;
    timer->loop = (struct ev_loop *)loop;
    timer->fire = fire;
    timer->owner = owner;
    ev_timer_init(&timer->watcher, rollcall_redis_timer_fired, 0., 0.);
    timer->watcher.data = timer;
    return timer;
}

void rollcall_redis_timer_schedule(rollcall_redis_timer *timer, double seconds) {
    ev_timer_stop(timer->loop, &timer->watcher);
    ev_timer_set(&timer->watcher, seconds < 0 ? 0. : seconds, 0.);
    ev_timer_start(timer->loop, &timer->watcher);
}

void rollcall_redis_timer_cancel(rollcall_redis_timer *timer) {
    ev_timer_stop(timer->loop, &timer->watcher);
}

int rollcall_redis_timer_is_scheduled(const rollcall_redis_timer *timer) {
    return ev_is_active(&timer->watcher);
}

void rollcall_redis_timer_destroy(rollcall_redis_timer *timer) {
    if (timer == NULL) return;
    ev_timer_stop(timer->loop, &timer->watcher);
    free(timer);
}

double rollcall_redis_loop_now(void *loop) {
    return ev_now((struct ev_loop *)loop);
}
