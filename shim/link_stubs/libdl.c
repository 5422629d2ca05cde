/* The libdl functions the library calls, in libc under a new version since glibc 2.34. Not
 * dlsym: the library defines it. */
#include "stand_in.h"

STAND_IN(dladdr)
STAND_IN(dladdr1)
STAND_IN(dlclose)
STAND_IN(dlerror)
STAND_IN(dlinfo)
STAND_IN(dlopen)
STAND_IN(dlvsym)
