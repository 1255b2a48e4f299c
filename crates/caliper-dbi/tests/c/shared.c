/* libshared.so: a function in a library the program links with. */
__attribute__((noipa)) int lib_fn(int x) { return x * 5 + 1; }
