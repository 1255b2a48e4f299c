/*
 * A "CUDA" program with annotated regions, on the stand-in GPU of
 * fake_cupti.c: copies in, kernels in a loop, a copy out, and a kernel
 * launched from a second thread under its own region, then a device
 * reset that destroys the context before exit. Each kernel and
 * copy takes a known time on the simulated device, which the GPU times
 * of the reports must add up to exactly.
 */
#include <caliper/cali.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

void fake_launch(const char *kernel, uint64_t ns);
void fake_memcpy(int kind, uint64_t bytes, uint64_t ns);
void fake_synchronize(void);
void fake_device_reset(void);

static void *worker(void *arg)
{
    (void)arg;
    cali_begin_region("worker");
    fake_launch("_Z6reducePKfPfi", 700000);
    cali_end_region("worker");
    return NULL;
}

int main(void)
{
    cali_begin_region("main");
    cali_begin_region("init");
    fake_memcpy(1, 1 << 20, 250000);
    cali_end_region("init");
    cali_begin_region("solve");
    for (int i = 0; i < 4; ++i)
        fake_launch("_Z4stepPfi", 1500000);
    fake_synchronize();
    cali_end_region("solve");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    fake_memcpy(2, 1 << 19, 125000);
    cali_end_region("main");
    fake_launch("_Z7cleanupv", 50000);
    fake_device_reset();
    puts("done");
    return 0;
}
