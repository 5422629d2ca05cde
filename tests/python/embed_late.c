/* A program that is not Python when roundtrim's constructor runs: it loads libpython later
 * (dlopen, RTLD_GLOBAL, as plugin hosts do), then runs a script in it.
 *   embed_late LIBPYTHON SCRIPT [ARG] */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    void (*init)(void) = (void (*)(void))dlsym(h, "Py_Initialize");
    int (*run)(const char *) = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
    int (*fini)(void) = (int (*)(void))dlsym(h, "Py_FinalizeEx");
    if (!init || !run || !fini)
        return 2;
    init();
    char code[4096];
    snprintf(code, sizeof code,
             "import sys\n"
             "sys.argv = ['%s', '%s']\n"
             "exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'),\n"
             "     {'__name__': '__main__', '__file__': sys.argv[0]})\n",
             argv[2], argc > 3 ? argv[3] : "2");
    int rc = run(code);
    return fini() == 0 && rc == 0 ? 0 : 1;
}
