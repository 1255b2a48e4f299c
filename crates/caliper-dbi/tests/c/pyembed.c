/* CPython's own main, linked against the shared libpython (Debian's
 * libpython3.11.so from libpython3.11-dev), as a CPython built with
 * --enable-shared is: the interpreter's code runs from a library. */
#include <Python.h>

int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }
