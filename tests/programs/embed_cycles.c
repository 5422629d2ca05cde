/* An embedder that starts and finalizes CPython again and again (Py_Initialize, Py_FinalizeEx),
 * as plugin hosts and test runners do, while a thread of its own ends a round every millisecond
 * (roundtrim_round_end, when roundtrim is preloaded; bare, there are no rounds).
 *   embed_cycles CYCLES [plain|threading] [wait] [lookup]
 * Each interpreter turns automatic gc off and makes cyclic garbage whose __del__ reads a global
 * of __main__: bare, the interpreter's own collection at finalization runs it while the globals
 * still exist, so it never prints "Exception ignored"; a collection run in the middle of
 * finalization, after the globals are cleared, would. "threading" imports threading in each
 * interpreter (its shutdown runs callbacks before finalization). With "wait" (and roundtrim
 * preloaded), each interpreter waits up to 5 s for a full collection it did not make itself: a
 * collection of roundtrim's. Prints one line per interpreter: "interpreter N collected_by_other
 * yes|no"; exit status 0 when every interpreter ran its code and every Py_FinalizeEx succeeded
 * (odd interpreters end through Py_Finalize, even ones through Py_FinalizeEx; with "lookup", both
 * are found with dlsym on libpython's handle, as plugin hosts that open libpython do). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile bool stop;

static void *rounds(void *arg)
{
    void (*round_end)(void) = (void (*)(void))arg;
    struct timespec ms = {0, 1000 * 1000};
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        round_end();
        nanosleep(&ms, NULL);
    }
    return NULL;
}

static const char body[] =
    "import gc, time, sys\n"
    "gc.disable()\n"
    "class Node:\n"
    "    def __init__(self):\n"
    "        self.me = self\n"
    "    def __del__(self):\n"
    "        counter[0] += 1\n"
    "counter = [0]\n"
    "def full_collections():\n"
    "    return gc.get_stats()[2]['collections']\n"
    "start = full_collections()\n"
    "deadline = time.monotonic() + (5.0 if WAIT else 0.02)\n"
    "while time.monotonic() < deadline:\n"
    "    for _ in range(200):\n"
    "        Node()\n"
    "    if WAIT and full_collections() > start:\n"
    "        break\n"
    "    time.sleep(0.001)\n"
    "other = full_collections() > start\n"
    "print('interpreter', N, 'collected_by_other', 'yes' if other else 'no', flush=True)\n"
    "for _ in range(500):\n"
    "    Node()\n";

static bool has_arg(int argc, char **argv, const char *word)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], word) == 0)
            return true;
    return false;
}

/* The ways to end an interpreter: Py_Finalize and Py_FinalizeEx as linked, or (lookup) as a
 * plugin host that opened libpython finds them: dlsym on libpython's handle. */
struct finalizers {
    void (*finalize)(void);
    int (*finalize_ex)(void);
};

static bool find_finalizers(bool lookup, struct finalizers *f)
{
    f->finalize = Py_Finalize;
    f->finalize_ex = Py_FinalizeEx;
    if (!lookup)
        return true;
    Dl_info info;
    void *h = dladdr((void *)Py_Initialize, &info) ? dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)
                                                   : NULL;
    if (!h)
        return false;
    f->finalize = (void (*)(void))dlsym(h, "Py_Finalize");
    f->finalize_ex = (int (*)(void))dlsym(h, "Py_FinalizeEx");
    return f->finalize && f->finalize_ex;
}

int main(int argc, char **argv)
{
    int cycles = argc > 1 ? atoi(argv[1]) : 40;
    bool threading = has_arg(argc, argv, "threading");
    void *round_end = dlsym(RTLD_DEFAULT, "roundtrim_round_end");
    bool wait = has_arg(argc, argv, "wait") && round_end;
    struct finalizers fin;
    if (!find_finalizers(has_arg(argc, argv, "lookup"), &fin))
        return 2;
    pthread_t t;
    if (round_end && pthread_create(&t, NULL, rounds, round_end) != 0)
        return 2;
    int rc = 0;
    for (int i = 1; i <= cycles; i++) {
        Py_Initialize();
        char head[128];
        snprintf(head, sizeof head, "N = %d\nWAIT = %d\n%s", i, wait ? 1 : 0,
                 threading ? "import threading\n" : "");
        size_t len = strlen(head) + sizeof body;
        char *code = malloc(len);
        if (!code)
            return 2;
        snprintf(code, len, "%s%s", head, body);
        if (PyRun_SimpleString(code) != 0)
            rc = 1;
        free(code);
        /* Both ways an embedder ends an interpreter, in turn. */
        if (i % 2)
            fin.finalize();
        else if (fin.finalize_ex() != 0)
            rc = 1;
    }
    if (round_end) {
        __atomic_store_n(&stop, true, __ATOMIC_RELAXED);
        pthread_join(t, NULL);
    }
    return rc;
}
