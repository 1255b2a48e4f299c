#!/usr/bin/env bash
# What profile.mpi costs an MPI call: crates/caliper-mpi/tests/cxx/mpi-bench.cpp
# ("self": one rank sends messages to itself and receives them, inside a
# region) built once without Caliper and once linked with the release
# libcaliper-mpi and run under runtime-report,profile.mpi, the two taking
# turns; ns per Send/Recv pair, and the difference of each pair of runs.
#
#   bench/mpi.sh [--smoke]      (RUNS=5 alternating pairs; needs Open MPI's mpicxx and mpirun)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-mpi
# The installed library's name (the tree's libcaliper-mpi.so), in the
# scratch directory.
ln -s "$(realpath "$target/release/libcaliper_mpi.so")" "$scratch/libcaliper-mpi.so"
source=crates/caliper-mpi/tests/cxx/mpi-bench.cpp
mpicxx -O2 -DNO_CALIPER -o "$scratch/plain" "$source"
mpicxx -O2 -Icrates/caliper-c/include -o "$scratch/profiled" "$source" -L"$scratch" -lcaliper-mpi \
    -L"$target/release" -lcaliper -Wl,-rpath,"$scratch:$libdir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pairs=$(count 1000000 1000)

# ns PROGRAM: ns per Send/Recv pair of one run ("self: 74.9 ns per Send/Recv pair").
ns() {
    local n
    n=$(CALI_CONFIG=runtime-report,profile.mpi,output=/dev/null mpirun -np 1 -x CALI_CONFIG "$1" self "$pairs" |
        sed -n 's/^self: \([0-9.]*\) ns per Send\/Recv pair$/\1/p')
    is_number "$n" "$1 self $pairs"
    echo "$n"
}

plain=() profiled=() added=()
for ((r = 0; r < runs; r++)); do
    a=$(ns "$scratch/plain")
    b=$(ns "$scratch/profiled")
    plain+=("$a")
    profiled+=("$b")
    added+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", b - a }')")
done
echo "Send/Recv pair, runtime-report,profile.mpi: $(range 1 "${profiled[@]}") ns (plain MPI: $(range 1 "${plain[@]}") ns; +$(range 1 "${added[@]}") ns a pair)"
