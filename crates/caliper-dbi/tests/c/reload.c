/* reload: opens libplugin.so, calls plugin_fn 13 times and closes it,
 * three times over: each opening maps the library afresh (mostly where the
 * last one was), and each closing unmaps it. */
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
    long sink = 0;
    for (int round = 0; round < 3; round++) {
        void *plugin = dlopen("./libplugin.so", RTLD_NOW);
        if (!plugin) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        int (*plugin_fn)(int) = (int (*)(int))dlsym(plugin, "plugin_fn");
        for (int i = 0; i < 13; i++) sink += plugin_fn(i);
        if (dlclose(plugin) != 0) {
            fprintf(stderr, "dlclose: %s\n", dlerror());
            return 1;
        }
    }
    printf("%ld\n", sink);
    return 0;
}
