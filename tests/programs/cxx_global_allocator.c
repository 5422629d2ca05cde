/* A C host with an allocator and a plugin, as in a process that loads a pool allocator for its
 * plugins: opens the allocator (argv[1]) with RTLD_GLOBAL, then the plugin (argv[2]) with
 * RTLD_LOCAL, has the plugin allocate once, closes its own handle of the allocator and has the
 * plugin allocate again, then closes the plugin. Bare, the plugin's operator new binds to the
 * allocator's, which the loader then keeps as long as the plugin is loaded, and no longer. Prints
 *   served=<blocks the allocator served>/1 values=<what the plugin read, twice>
 *   allocator_loaded_after_plugin=<0|1>
 * and exits 0, or dies in the second call where the allocator was unmapped under it. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    void *pool = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    void *plugin = pool ? dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) : NULL;
    int *served = pool ? (int *)dlsym(pool, "pool_served") : NULL;
    int (*run)(void) = plugin ? (int (*)(void))dlsym(plugin, "plugin_new_delete") : NULL;
    if (!served || !run) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int first = run();
    int before = *served;
    dlclose(pool);
    int after = run();
    printf("served=%d/1 values=%d,%d\n", before, first, after);
    dlclose(plugin);
    void *still = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    printf("allocator_loaded_after_plugin=%d\n", still != NULL);
    return 0;
}
