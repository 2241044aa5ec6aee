#include "CBenchZlib.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct bench_inflater {
    z_stream stream;
    unsigned char *output;
    size_t used;
    size_t capacity;
};

/* A buffer larger than this is freed after its message (an interval list can be 64 KB). */
static const size_t kept_capacity = 16384;

bench_inflater_t *bench_inflater_new(void) {
    bench_inflater_t *inflater = calloc(1, sizeof(*inflater));
    if (!inflater)
        return NULL;
    if (inflateInit2(&inflater->stream, -15) != Z_OK) {
        free(inflater);
        return NULL;
    }
    return inflater;
}

void bench_inflater_free(bench_inflater_t *inflater) {
    if (!inflater)
        return;
    inflateEnd(&inflater->stream);
    free(inflater->output);
    free(inflater);
}

static int grow(bench_inflater_t *inflater) {
    size_t capacity = inflater->capacity ? inflater->capacity * 2 : 4096;
    unsigned char *bigger = realloc(inflater->output, capacity);
    if (!bigger)
        return -1;
    inflater->output = bigger;
    inflater->capacity = capacity;
    return 0;
}

int bench_inflater_feed(bench_inflater_t *inflater, const void *bytes, size_t length) {
    z_stream *stream = &inflater->stream;
    stream->next_in = (Bytef *)bytes;
    stream->avail_in = (uInt)length;
    while (stream->avail_in > 0) {
        if (inflater->used == inflater->capacity && grow(inflater) != 0)
            return -1;
        stream->next_out = inflater->output + inflater->used;
        stream->avail_out = (uInt)(inflater->capacity - inflater->used);
        int status = inflate(stream, Z_SYNC_FLUSH);
        inflater->used = inflater->capacity - stream->avail_out;
        if (status == Z_STREAM_END) { /* a final block: the next message starts a new stream */
            inflateReset(stream);
            continue;
        }
        if (status == Z_BUF_ERROR && stream->avail_out > 0)
            return -1; /* no progress with room left: the input is truncated or corrupt */
        if (status != Z_OK && status != Z_BUF_ERROR)
            return -1;
    }
    /* Output may still be pending inside zlib with all input consumed: drain it. */
    while (stream->avail_out == 0) {
        if (grow(inflater) != 0)
            return -1;
        stream->next_out = inflater->output + inflater->used;
        stream->avail_out = (uInt)(inflater->capacity - inflater->used);
        int status = inflate(stream, Z_SYNC_FLUSH);
        inflater->used = inflater->capacity - stream->avail_out;
        if (status != Z_OK && status != Z_BUF_ERROR)
            return -1;
    }
    return 0;
}

const void *bench_inflater_finish(bench_inflater_t *inflater, size_t *length) {
    static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
    if (bench_inflater_feed(inflater, tail, sizeof(tail)) != 0)
        return NULL;
    *length = inflater->used;
    return inflater->output ? (const void *)inflater->output : (const void *)tail;
}

void bench_inflater_reset(bench_inflater_t *inflater) {
    inflater->used = 0;
    if (inflater->capacity > kept_capacity) {
        free(inflater->output);
        inflater->output = NULL;
        inflater->capacity = 0;
    }
}
