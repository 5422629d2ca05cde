#include "runtime/output/path_template.h"

#include <sys/utsname.h>
#include <unistd.h>

#include "policy/procfs.h"

bool roundtrim_output_path(const char *tmpl, char *out, size_t cap)
{
    struct utsname names;
    char host[sizeof names.nodename];
    if (uname(&names) != 0)
        names.nodename[0] = '\0';
    names.nodename[sizeof names.nodename - 1] = '\0';
    roundtrim_safe_host_name(names.nodename, host, sizeof host);
    return roundtrim_expand_path(tmpl, (int)getpid(), host, out, cap);
}
