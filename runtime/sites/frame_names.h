/* Native frames as a sites record names them: module, offset and the symbol dladdr knows, looked
 * up once per return address. dladdr searches a library's whole dynamic symbol table, which
 * in a PyTorch process costs about a millisecond a frame; the same frames come back every round.
 * Worker only. */
#ifndef ROUNDTRIM_RUNTIME_SITES_FRAME_NAMES_H
#define ROUNDTRIM_RUNTIME_SITES_FRAME_NAMES_H

#include <stdint.h>

#include "policy/json_writer.h"

/* Forgets every name when a library was loaded or unloaded since the last call (an address may
 * now be another library's). Call once per record. */
void roundtrim_frame_names_refresh(void);

/* Writes {"module":...,"offset":"0x...","symbol":...} for the return address ip into j. */
void roundtrim_frame_json(struct roundtrim_json *j, uintptr_t ip);

#endif
