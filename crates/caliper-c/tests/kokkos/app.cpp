// A small Kokkos program (any backend): a profile region around a
// parallel_for, a parallel_reduce and a deep copy between two views.
// Prints the sum, which the tools must leave unchanged.
#include <Kokkos_Core.hpp>
#include <cstdio>

int main(int argc, char** argv) {
    Kokkos::initialize(argc, argv);
    {
        const int n = 1000;
        Kokkos::Profiling::pushRegion("solve");
        Kokkos::View<double*> a("a", n), b("b", n);
        Kokkos::parallel_for("fill", n, KOKKOS_LAMBDA(int i) { a(i) = i; });
        double sum = 0;
        Kokkos::parallel_reduce(
            "sum", n, KOKKOS_LAMBDA(int i, double& acc) { acc += a(i); }, sum);
        Kokkos::deep_copy(b, a);
        Kokkos::fence();
        Kokkos::Profiling::popRegion();
        std::printf("sum %g\n", sum);
    }
    Kokkos::finalize();
    return 0;
}
