#include "runtime/python_frames.h"

void roundtrim_python_frames_init(const struct roundtrim_py_api *api)
{
    (void)api;
}

const char *roundtrim_python_frames_unavailable(void)
{
    return "not_python";
}

int roundtrim_python_stack(struct roundtrim_py_frame *out, int max)
{
    (void)out;
    (void)max;
    return 0;
}

bool roundtrim_python_code_names(const void *code, char *file, size_t file_len, char *func,
                                 size_t func_len)
{
    (void)code, (void)file, (void)file_len, (void)func, (void)func_len;
    return false;
}
