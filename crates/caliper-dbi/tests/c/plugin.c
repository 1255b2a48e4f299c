/* libplugin.so: a function in a library the program dlopens. */
__attribute__((noipa)) int plugin_fn(int x) { return x * 2 + 1; }
