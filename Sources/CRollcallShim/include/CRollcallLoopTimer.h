#ifndef CROLLCALL_LOOP_TIMER_H
#define CROLLCALL_LOOP_TIMER_H

// One-shot timers on a libev loop (RollcallEventLoop's `LoopTimer`). libev is loaded at run
// time (`EventLoop` dlopens it), so its functions are looked up once, not linked: nothing that
// uses this shim without a loop needs libev. Everything here runs on the loop's thread.

/// A one-shot libev timer on a given loop calling `fire(owner)`.
typedef struct rollcall_loop_timer rollcall_loop_timer;
typedef void (*rollcall_loop_timer_fn)(void *owner);

/// A timer on `loop` (a `struct ev_loop *`), not armed. NULL when libev is not loaded or
/// memory ran out.
rollcall_loop_timer *rollcall_loop_timer_create(void *loop, rollcall_loop_timer_fn fire, void *owner);
/// (Re)arms the timer `seconds` from the loop's current time; replaces any earlier schedule.
void rollcall_loop_timer_schedule(rollcall_loop_timer *timer, double seconds);
/// Disarms the timer.
void rollcall_loop_timer_cancel(rollcall_loop_timer *timer);
/// Nonzero while armed and not yet fired.
int rollcall_loop_timer_is_scheduled(const rollcall_loop_timer *timer);
/// Cancels and frees the timer (NULL is ignored).
void rollcall_loop_timer_destroy(rollcall_loop_timer *timer);

/// The loop's time (`ev_now`): the time timers are measured against, in seconds; 0 when
/// libev is not loaded.
double rollcall_loop_now(void *loop);

#endif
