/* A C program that uses a C++ library: opened with dlopen (libstdc++ then arrives after the start,
 * in that library's own scope), or linked with it (built with -DLINKED). Runs its checks of the
 * operator new and delete forms; with --count, between two round ends. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int cxx_semantics_run(int count_rounds);

int main(int argc, char **argv)
{
    int count = argc > 1 && strcmp(argv[argc - 1], "--count") == 0;
#ifdef LINKED
    (void)argv;
    return cxx_semantics_run(count);
#else
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int (*run)(int) = (int (*)(int))dlsym(h, "cxx_semantics_run");
    return run ? run(count) : 2;
#endif
}
