#include "policy/code_origin.h"

#include <string.h>

/* A component exactly `name`. */
static bool has_component(const char *file, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strstr(file, name); p; p = strstr(p + 1, name))
        if ((p == file || p[-1] == '/') && (p[len] == '/' || p[len] == '\0'))
            return true;
    return false;
}

bool roundtrim_python_file_is_library(const char *file)
{
    if (!file || !file[0] || file[0] == '<')
        return true;
    if (has_component(file, "site-packages") || has_component(file, "dist-packages"))
        return true;
    /* lib/python3.11/, lib/python3/, lib/python311.zip/, lib64/python3.9/: the component after
     * a `lib` or `lib64` one. */
    for (const char *p = strstr(file, "python3"); p; p = strstr(p + 1, "python3")) {
        if (p == file || p[-1] != '/')
            continue;
        const char *slash = p - 1;
        const char *start = slash;
        while (start > file && start[-1] != '/')
            start--;
        size_t n = (size_t)(slash - start);
        if ((n == 3 && !strncmp(start, "lib", 3)) || (n == 5 && !strncmp(start, "lib64", 5)))
            return true;
    }
    return false;
}
