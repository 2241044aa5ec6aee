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

#endif
