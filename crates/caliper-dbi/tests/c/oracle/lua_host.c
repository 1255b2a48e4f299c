/* A minimal host of the Lua library: runs the script named by argv[1]. */
#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    int failed = luaL_dofile(L, argv[1]);
    if (failed) fprintf(stderr, "%s\n", lua_tostring(L, -1));
    lua_close(L);
    return failed ? 1 : 0;
}
