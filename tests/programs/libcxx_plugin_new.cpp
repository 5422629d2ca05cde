// A plugin that allocates with new and frees with delete. Built twice: on libstdc++ (a C++
// plugin: its runtime comes in its own scope), and with no C++ runtime at all (its operator new
// is whatever the process supplies: here the allocator the host opened with RTLD_GLOBAL).

namespace {
int *volatile kept; // the compiler may not drop the pair
}

extern "C" __attribute__((visibility("default"))) int plugin_new_delete()
{
    kept = new int(7);
    int v = *kept;
    delete kept;
    return v;
}
