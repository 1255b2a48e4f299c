#!/usr/bin/env bash
# The GPU check of the cupti and cuptitrace services, on a machine with an
# NVIDIA GPU and the CUDA toolkit (nvcc, CUPTI) but no Rust: it takes a
# libcaliper built elsewhere ($1: a folder with lib/libcaliper.so and
# include/, e.g. `make install PREFIX=...` with the library stripped),
# builds cuda_app.cu against it and, as an oracle, against CUPTI alone
# (cupti_oracle.cpp), runs the configs, and writes everything to $OUT
# (log.txt, profile.json, trace.cali) for the checks made afterwards.
#
#   OUT=/tmp/gpu crates/caliper-c/tests/gpu/run.sh target/gpu
set -u
here=$(cd "$(dirname "$0")" && pwd)
caliper=$(cd "${1:?the folder of libcaliper: lib/ and include/}" && pwd)
out=${OUT:-/tmp/gpu-out}
build=$(mktemp -d)
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1

section() { echo; echo "=== $*"; }
run() { timeout 120 "$@"; echo "[exit $?]"; }

section machine
nvidia-smi -L
nvcc --version | tail -2
cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
echo "CUDA toolkit: $cuda"
cupti_h=$(timeout 60 find "$cuda" /usr/local /usr/include /opt -name cupti.h 2>/dev/null | head -1)
cupti_so=$(find "$cuda" -name 'libcupti.so*' 2>/dev/null | sort | head -1)
[ -n "$cupti_so" ] || cupti_so=$(timeout 60 find /usr/local /usr/lib /opt -name 'libcupti.so*' 2>/dev/null | sort | head -1)
echo "cupti.h: $cupti_h"; echo "libcupti: $cupti_so"
cupti_inc=$(dirname "$cupti_h"); cupti_lib=$(dirname "$cupti_so")

section build
arch=-arch=sm_90
run nvcc -O2 $arch -o "$build/app" "$here/cuda_app.cu" -I"$caliper/include" \
    -L"$caliper/lib" -lcaliper -Xlinker -rpath,"$caliper/lib"
run nvcc -O2 $arch -o "$build/oracle" "$here/cuda_app.cu" "$here/cupti_oracle.cpp" -I"$caliper/include" \
    -I"$cupti_inc" -L"$cupti_lib" -lcupti -Xlinker -rpath,"$cupti_lib"
run nvcc -o "$build/offsets" -x cu "$here/offsets.c" -I"$cupti_inc"
section offsets; run "$build/offsets"

section "native run"; run "$build/app"
section "cuda-activity-report, CUPTI found by the library's own search"
CALI_LOG_VERBOSITY=2 CALI_CONFIG=cuda-activity-report run "$build/app"
export LD_LIBRARY_PATH="$cupti_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
section "cuda-activity-report,show_kernels,cuda.memcpy"
CALI_CONFIG=cuda-activity-report,show_kernels,cuda.memcpy run "$build/app"
section "runtime-report,profile.cuda,cuda.gputime"
CALI_CONFIG=runtime-report,profile.cuda,cuda.gputime run "$build/app"
section "cuda-activity-profile (profile.json)"
CALI_CONFIG="cuda-activity-profile(output.format=json,output=$out/profile.json)" run "$build/app"
section "trace (trace.cali)"
CALI_SERVICES_ENABLE=cupti,cuptitrace,event,recorder,trace CALI_CUPTI_CALLBACK_DOMAINS=runtime,sync,resource \
    CALI_RECORDER_FILENAME="$out/trace.cali" run "$build/app"
section "oracle: CUPTI alone, two runs"
run "$build/oracle"
run "$build/oracle"

section "host time per kernel launch, 20000 empty kernels, alternating"
for i in 1 2 3; do
    echo -n "native  "; "$build/app" bench 20000
    echo -n "report  "; CALI_CONFIG=cuda-activity-report,output=/dev/null "$build/app" bench 20000
    echo -n "runtime "; CALI_CONFIG=runtime-report,profile.cuda,output=/dev/null "$build/app" bench 20000
    echo -n "cupti   "; "$build/oracle" bench 20000 | head -1
done
section done
