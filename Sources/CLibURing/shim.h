// liburing (Debian's liburing-dev), used only by CSendBatch's C file.
#include <liburing.h>
