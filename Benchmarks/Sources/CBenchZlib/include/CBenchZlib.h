#ifndef CBENCH_ZLIB_H
#define CBENCH_ZLIB_H

#include <stddef.h>

/// One connection's permessage-deflate receiver (RFC 7692): a raw inflate stream (zlib,
/// window bits -15) kept across messages (context takeover) and a growing output buffer.
typedef struct bench_inflater bench_inflater_t;

/// A new inflater; NULL when zlib cannot allocate one.
bench_inflater_t *bench_inflater_new(void);

/// Frees the inflater and its buffer.
void bench_inflater_free(bench_inflater_t *inflater);

/// Inflates `length` compressed bytes of the current message, appending the output to the
/// buffer. Returns 0, or -1 on a zlib error (corrupt stream) or when out of memory.
int bench_inflater_feed(bench_inflater_t *inflater, const void *bytes, size_t length);

/// Ends the current message: inflates the `00 00 ff ff` tail the sender stripped (RFC 7692
/// §7.2.2) and returns the whole message (valid until the next call), its length in
/// `*length`. NULL on a zlib error.
const void *bench_inflater_finish(bench_inflater_t *inflater, size_t *length);

/// Empties the output buffer for the next message (frees it when it grew large, so that
/// thousands of idle connections keep little).
void bench_inflater_reset(bench_inflater_t *inflater);

#endif
