#include "CRollcallShim.h"
