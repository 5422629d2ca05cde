/* A C program that uses C++ libraries: opened with dlopen (their C++ runtime then arrives after
 * the start, in each library's own scope), or linked with one (built with -DLINKED). Runs each
 * library's checks of the operator new and delete forms in turn, one JSON line each; with
 * --count, between two round ends (one library only). Libraries built on different runtimes
 * (libstdc++, libc++) may share the process, as in a host with plugins; "--global LIB" opens LIB
 * with RTLD_GLOBAL first (an allocator that overrides operator new for what is opened later). */
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
    for (int i = 1; i < argc - count; i++) {
        int global = strcmp(argv[i], "--global") == 0 && i + 1 < argc - count;
        void *h = dlopen(argv[i + global], RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 2;
        }
        if (global) {
            i++;
            continue;
        }
        int (*run)(int) = (int (*)(int))dlsym(h, "cxx_semantics_run");
        if (!run || run(count) != 0)
            return 2;
    }
    return 0;
#endif
}
