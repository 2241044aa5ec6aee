#ifndef CROLLCALL_LOOP_WAKEUP_H
#define CROLLCALL_LOOP_WAKEUP_H

// A wake-up of a libev loop from another thread (libev's `ev_async`): RollcallEventLoop's
// `LoopWakeup`. libev's functions are looked up at run time, as for the loop timers.
// `rollcall_loop_wakeup_signal` may be called from any thread; everything else runs on the
// loop's thread.

/// An async watcher on a given loop calling `fire(owner)` on the loop's thread.
typedef struct rollcall_loop_wakeup rollcall_loop_wakeup;
typedef void (*rollcall_loop_wakeup_fn)(void *owner);

/// A started watcher on `loop` (a `struct ev_loop *`). NULL when libev is not loaded or memory
/// ran out.
rollcall_loop_wakeup *rollcall_loop_wakeup_create(void *loop, rollcall_loop_wakeup_fn fire, void *owner);
/// Makes the loop call `fire` soon (several signals before it runs may give one call). Any thread.
void rollcall_loop_wakeup_signal(rollcall_loop_wakeup *wakeup);
/// Stops and frees the watcher (NULL is ignored). No thread may signal it any more.
void rollcall_loop_wakeup_destroy(rollcall_loop_wakeup *wakeup);

#endif
