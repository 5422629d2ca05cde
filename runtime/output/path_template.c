#include "runtime/output/path_template.h"

#include <sys/utsname.h>
#include <unistd.h>

#include "policy/procfs.h"

void roundtrim_output_host(char *out, size_t cap)
{
    struct utsname names;
    if (uname(&names) != 0)
        names.nodename[0] = '\0';
    names.nodename[sizeof names.nodename - 1] = '\0';
    roundtrim_safe_host_name(names.nodename, out, cap);
}

bool roundtrim_output_path(const char *tmpl, char *out, size_t cap)
{
    char host[sizeof((struct utsname *)0)->nodename];
    roundtrim_output_host(host, sizeof host);
    return roundtrim_expand_path(tmpl, (int)getpid(), host, out, cap);
}
