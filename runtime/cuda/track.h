/* What the layers above see of runtime/cuda/: the device-memory counts a round boundary takes
 * (account.h), a round's CUDA figures (round_fill.h), the pool release of the cleanup
 * (release.h), a primary context for roundtrim's own CUDA work (context.h), whether a stream
 * capture forbids such work, and the reset in a fork child (account.h). The driver hooks in
 * shim/ use account.h and driver.h directly. */
#ifndef ROUNDTRIM_RUNTIME_CUDA_TRACK_H
#define ROUNDTRIM_RUNTIME_CUDA_TRACK_H

#include "runtime/cuda/account.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/release.h"
#include "runtime/cuda/round_fill.h"

#endif
