/* Well-formed UTF-8, for text a program controls (file names, its process name) that goes into
 * formats that must stay valid: the JSON log, Prometheus labels. */
#ifndef ROUNDTRIM_POLICY_UTF8_H
#define ROUNDTRIM_POLICY_UTF8_H

#include <stddef.h>

/* Length of the well-formed UTF-8 sequence at p (1 to 4), or 0: a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF or a sequence cut short (by the string's
 * end too). */
size_t roundtrim_utf8_sequence(const unsigned char *p);

#endif
