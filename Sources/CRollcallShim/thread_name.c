#define _GNU_SOURCE
#include <pthread.h>

#include "CRollcallShim.h"

int rollcall_name_this_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
