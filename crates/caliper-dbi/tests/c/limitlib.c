/* liblimited.so for limited.c: built without start files, so that none
 * of its code runs before the program calls lib_step. */
long lib_step(long x) { return x + 1; }
