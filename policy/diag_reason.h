/* Why a diagnosis has no verdict or no forecast: the names of policy/diag_causes.def's
 * RT_DIAG_REASON rows, the only way C code says one. */
#ifndef ROUNDTRIM_POLICY_DIAG_REASON_H
#define ROUNDTRIM_POLICY_DIAG_REASON_H

enum roundtrim_diag_reason {
#define RT_DIAG_REASON(id, name, meaning) RT_DIAGR_##id,
#include "policy/diag_causes.def"
    RT_DIAGR_COUNT
};

/* The reason's stable name, as the diagnosis record writes it. */
const char *roundtrim_diag_reason_name(enum roundtrim_diag_reason r);

#endif
