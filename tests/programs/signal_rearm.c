/* A SysV-style handler that re-arms itself with signal() inside the handler, between a failed
 * dlsym and the dlerror() that reports it: signal() is async-signal-safe, and must neither look
 * anything up nor disturb the pending error. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>

static void rearm(int sig)
{
    signal(sig, rearm);
}

int main(void)
{
    signal(SIGUSR2, rearm);
    void *p = dlsym(RTLD_DEFAULT, "no_such_symbol_roundtrim_test");
    raise(SIGUSR2);
    const char *e = dlerror();
    printf("found=%d error=%s\n", p != NULL, e ? "kept" : "lost");
    return 0;
}
