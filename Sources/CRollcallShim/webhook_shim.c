#include "CRollcallWebhook.h"

#include <stdio.h>

int rollcall_webhook_append_headers(void *in, size_t room, const char *signature, size_t content_length) {
    char **p = (char **)in;
    int written = snprintf(*p, room,
                           "Content-Type: application/json\r\n"
                           "Content-Length: %zu\r\n"
                           "Rollcall-Signature: %s\r\n",
                           content_length, signature);
    if (written < 0 || (size_t)written >= room)
        return 1;
    *p += written;
    return 0;
}
