/* Prints what dlerror() says before the program has called anything of the dynamic loader: a
 * preloaded library's own lookups must leave nothing there. */
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    const char *e = dlerror();
    printf("%s\n", e ? e : "(none)");
    return 0;
}
