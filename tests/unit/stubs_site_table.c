/* What runtime/sites/site_table.c calls, stood in for its tests (stubs_site_table.h). */
#include "stubs_site_table.h"

#include <stdint.h>
#include <stdio.h>

#include "runtime/python/frames.h"

const void *stub_unreadable_code;
unsigned stub_code_generation;

static void code_names(const void *code, char *file, size_t file_len, char *func, size_t func_len)
{
    snprintf(file, file_len, "file_%lx.py", (unsigned long)(uintptr_t)code);
    if (stub_code_generation)
        snprintf(func, func_len, "func_%lx_%u", (unsigned long)(uintptr_t)code,
                 stub_code_generation);
    else
        snprintf(func, func_len, "func_%lx", (unsigned long)(uintptr_t)code);
}

bool roundtrim_python_code_names(const void *code, char *file, size_t file_len, char *func,
                                 size_t func_len)
{
    if (code == stub_unreadable_code)
        return false;
    code_names(code, file, file_len, func, func_len);
    return true;
}
