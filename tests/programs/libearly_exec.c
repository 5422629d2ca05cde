/* A library whose constructor replaces the program with echo before roundtrim's own constructor
 * may have run (as a library preloaded ahead of roundtrim does). */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void exec_at_load(void)
{
    if (getenv("EARLY_EXEC_DONE"))
        return;
    setenv("EARLY_EXEC_DONE", "1", 1);
    char *argv[] = {"echo", "exec-ok", NULL};
    execv("/bin/echo", argv);
    _exit(99); /* the exec failed */
}
