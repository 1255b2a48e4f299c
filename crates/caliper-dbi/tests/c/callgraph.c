/* A program whose call graph is known exactly, for cali-run's callgraph
 * tests: a function called from two callers (shared, from a 3 times and
 * from b once), one called from two functions (leaf, from shared and
 * is_odd), plain recursion (fact) and mutual recursion (is_even and
 * is_odd, a cycle). Built with -O2; every call stays a real call (no
 * tail calls, which the arcs count at the call site of the caller's
 * caller). */
#define NOIPA __attribute__((noipa, optimize("no-optimize-sibling-calls")))

volatile long sink;

NOIPA void leaf(void) { sink += 1; }
NOIPA void shared(int n) {
    for (int i = 0; i < n; i++) leaf();
}
NOIPA void a(void) { shared(2); }
NOIPA void b(void) { shared(2); }
NOIPA long fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
NOIPA int is_odd(int n);
NOIPA int is_even(int n) { return n == 0 ? 1 : is_odd(n - 1); }
NOIPA int is_odd(int n) {
    leaf();
    return n == 0 ? 0 : is_even(n - 1);
}

int main(void) {
    for (int i = 0; i < 3; i++) a();
    b();
    sink += fact(5);
    sink += is_even(4);
    return sink == 131 ? 7 : 1;
}
