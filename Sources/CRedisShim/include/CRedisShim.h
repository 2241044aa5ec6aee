#ifndef CREDISSHIM_H
#define CREDISSHIM_H

// Glue between hiredis' async API, its libev adapter (a header of static functions Swift
// cannot import) and the broker's libev loop. Everything here runs on the loop's thread.

#include <stddef.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

/// Starts a non-blocking TCP connect to host:port, attaches the context's read and write
/// watchers to `loop` (a `struct ev_loop *`), stores `owner` in `ac->data` and installs the
/// two connection callbacks. NULL on an immediate failure, with the reason in `error`.
redisAsyncContext *rollcall_redis_connect(void *loop, const char *host, int port, void *owner,
                                          redisConnectCallback *onConnect,
                                          redisDisconnectCallback *onDisconnect,
                                          char *error, size_t errorLength);

/// Stops the context's watchers: hiredis gets no more socket events for it, so it cannot
/// free it on its own before a deferred `redisAsyncFree`.
void rollcall_redis_quiesce(redisAsyncContext *ac);

/// `ac->data` (the owner given to `rollcall_redis_connect`).
void *rollcall_redis_owner(const redisAsyncContext *ac);

/// A one-shot libev timer on a given loop calling `fire(owner)`.
typedef struct rollcall_redis_timer rollcall_redis_timer;
typedef void (*rollcall_redis_timer_fn)(void *owner);

rollcall_redis_timer *rollcall_redis_timer_create(void *loop, rollcall_redis_timer_fn fire, void *owner);
/// (Re)arms the timer `seconds` from the loop's current time; replaces any earlier schedule.
void rollcall_redis_timer_schedule(rollcall_redis_timer *timer, double seconds);
void rollcall_redis_timer_cancel(rollcall_redis_timer *timer);
int rollcall_redis_timer_is_scheduled(const rollcall_redis_timer *timer);
/// Cancels and frees the timer.
void rollcall_redis_timer_destroy(rollcall_redis_timer *timer);

/// The loop's time (`ev_now`): the time timers are measured against, in seconds.
double rollcall_redis_loop_now(void *loop);

#endif
