#ifndef CROLLCALL_SHIM_H
#define CROLLCALL_SHIM_H

#include <libwebsockets.h>
#include "CRollcallClientShim.h"

/// LWS_PRE is a macro Swift cannot import: the headroom lws needs before a payload.
static const size_t rollcall_lws_pre = LWS_PRE;

/// A sorted-usec-list timer that remembers who owns it, so its callback can find its way
/// back to Swift (lws passes only the `sul` pointer).
typedef struct rollcall_timer {
    lws_sorted_usec_list_t sul;
    void *owner;
} rollcall_timer_t;

/// Recovers the timer from the `sul` pointer lws hands to the callback.
static inline rollcall_timer_t *rollcall_timer_from_sul(lws_sorted_usec_list_t *sul) {
    return lws_container_of(sul, rollcall_timer_t, sul);
}

#endif
