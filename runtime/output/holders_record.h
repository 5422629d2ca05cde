/* The "holders" record: what a walk of the holder search found keeping a growing process's
 * memory (runtime/python/holders.h), written when the walk ends. */
#ifndef ROUNDTRIM_RUNTIME_OUTPUT_HOLDERS_RECORD_H
#define ROUNDTRIM_RUNTIME_OUTPUT_HOLDERS_RECORD_H

#include <stdint.h>

#include "runtime/python/holders.h"

void roundtrim_holders_record(uint64_t round, const struct roundtrim_holders_walk *walk);

#endif
