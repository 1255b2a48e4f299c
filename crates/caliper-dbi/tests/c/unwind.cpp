/* A C++ exception thrown below a call in the first bytes of a function
 * (push rbx; mov ebx,edi; call thrower), caught in its caller. */
#include <cstdio>
[[gnu::noinline]] void thrower(int i) { if (i >= 0) throw i; }
[[gnu::noinline]] void after(int i) { std::printf("%d\n", i); }
[[gnu::noinline]] void f(int i) { thrower(i); after(i); }
int main() {
    int caught = 0;
    for (int i = 0; i < 100; i++) {
        try { f(i); } catch (int) { caught++; }
    }
    std::printf("caught %d\n", caught);
}
