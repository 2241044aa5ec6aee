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
