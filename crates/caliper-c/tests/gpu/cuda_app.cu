// A small CUDA program with annotated regions, for the GPU check of the
// cupti/cuptitrace services (run.sh): copies in, two kernels ten times
// each, a copy out. Each kernel is timed with CUDA events as well, an
// oracle independent of CUPTI, whose totals it prints.
//
//   cuda_app [reps]   the annotated run (reps: the kernels' work)
//   cuda_app bench N  N empty-kernel launches, the host time per launch
#include <caliper/cali.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cudaError_t check_ = (call);                                                     \
        if (check_ != cudaSuccess) {                                                     \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(check_)); \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

__global__ void scale(float *x, int n, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        for (int r = 0; r < reps; ++r)
            v = v * 0.999f + 0.001f;
        x[i] = v;
    }
}

__global__ void axpy(const float *x, float *y, int n, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i];
        for (int r = 0; r < reps; ++r)
            v = 0.5f * x[i] + v * 0.5f;
        y[i] = v;
    }
}

__global__ void empty() {}

static int bench(int launches)
{
    CHECK(cudaFree(0));
    for (int i = 0; i < 1000; ++i)
        empty<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i)
        empty<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    auto t1 = std::chrono::steady_clock::now();
    std::printf("launch_ns %.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / launches);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && std::strcmp(argv[1], "bench") == 0)
        return bench(std::atoi(argv[2]));
    int reps = argc > 1 ? std::atoi(argv[1]) : 4000;
    const int n = 1 << 24;
    const size_t bytes = n * sizeof(float);
    // Pinned host memory: its copies run at the link's speed, the same
    // from run to run, so that runs can be compared with each other.
    float *host, *x, *y;
    CHECK(cudaMallocHost(&host, bytes));
    for (int i = 0; i < n; ++i)
        host[i] = 1.0f;
    cali_begin_region("main");

    cali_begin_region("init");
    CHECK(cudaMalloc(&x, bytes));
    CHECK(cudaMalloc(&y, bytes));
    CHECK(cudaMemcpy(x, host, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, host, bytes, cudaMemcpyHostToDevice));
    cali_end_region("init");

    cali_begin_region("solve");
    cudaEvent_t ev[40];
    for (auto &e : ev)
        CHECK(cudaEventCreate(&e));
    for (int it = 0; it < 10; ++it) {
        CHECK(cudaEventRecord(ev[4 * it]));
        scale<<<n / 256, 256>>>(x, n, reps);
        CHECK(cudaEventRecord(ev[4 * it + 1]));
        axpy<<<n / 256, 256>>>(x, y, n, reps / 2);
        CHECK(cudaEventRecord(ev[4 * it + 2]));
    }
    CHECK(cudaDeviceSynchronize());
    float scale_ms = 0, axpy_ms = 0;
    for (int it = 0; it < 10; ++it) {
        float ms;
        CHECK(cudaEventElapsedTime(&ms, ev[4 * it], ev[4 * it + 1]));
        scale_ms += ms;
        CHECK(cudaEventElapsedTime(&ms, ev[4 * it + 1], ev[4 * it + 2]));
        axpy_ms += ms;
    }
    cali_end_region("solve");

    cali_begin_region("finish");
    CHECK(cudaMemcpy(host, y, bytes, cudaMemcpyDeviceToHost));
    cali_end_region("finish");
    cali_end_region("main");
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    std::printf("events scale_s %.6f axpy_s %.6f check %.4f\n", scale_ms / 1e3, axpy_ms / 1e3, host[n / 2]);
    CHECK(cudaFreeHost(host));
    return 0;
}
