/* Whether a Python source file is the program's own or library code, from its path alone (a
 * sample inside malloc cannot ask the interpreter for its prefixes): the standard library and
 * installed packages sit in a `lib/python3...` folder (stdlib, site-packages, Debian's
 * /usr/lib/python3/dist-packages, a stdlib zip), in any `site-packages` or `dist-packages`
 * folder (user sites, --target installs), and frozen or generated code names no file at all
 * (`<frozen importlib._bootstrap>`, `<string>`). Everything else is the program's. */
#ifndef ROUNDTRIM_POLICY_CODE_ORIGIN_H
#define ROUNDTRIM_POLICY_CODE_ORIGIN_H

#include <stdbool.h>

bool roundtrim_python_file_is_library(const char *file);

#endif
