/* What dlerror() says at the start of main, and after one failed lookup of the program's own:
 * roundtrim's lookups at start (symbols that are not there in this process) must leave nothing
 * behind. Prints one JSON line. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    const char *at_start = dlerror();
    int pending_at_start = at_start != NULL;
    void *missing = dlsym(RTLD_DEFAULT, "roundtrim_test_no_such_symbol");
    const char *own = dlerror();
    int own_names_it = own && strstr(own, "roundtrim_test_no_such_symbol") != NULL;
    printf("{\"pending_at_start\":%d,\"missing\":%d,\"own_error_named\":%d}\n", pending_at_start,
           missing == NULL, own_names_it);
    return 0;
}
