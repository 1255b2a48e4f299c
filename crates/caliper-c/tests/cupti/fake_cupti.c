/*
 * A stand-in for CUPTI and a GPU, built against CUPTI's own headers, so
 * that libcaliper's cupti and cuptitrace services run without a GPU: the
 * library is named libcupti.so (libcaliper loads it as it loads CUPTI),
 * implements the callback and activity functions those services call,
 * and gives the test program "CUDA" calls (fake_launch, fake_memcpy,
 * fake_synchronize) that behave as the runtime's do under CUPTI: API
 * callbacks on entry and exit with a correlation id, and an activity
 * record with that id in the real layout (CUpti_ActivityKernel9,
 * CUpti_ActivityMemcpy6) with a simulated GPU time, delivered in buffers
 * the client hands out, at cuptiActivityFlushAll or when a buffer fills.
 */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_CallbackFunc subscriber;
static int domains[CUPTI_CB_DOMAIN_SIZE];
static int enabled[64];
static CUpti_BuffersCallbackRequestFunc request_buffer;
static CUpti_BuffersCallbackCompleteFunc complete_buffer;
static uint8_t *buffer;
static size_t buffer_size, buffer_used;
static uint32_t next_correlation = 1;
/* The simulated device's clock: work runs back to back on it. */
static uint64_t device_free_at;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc callback, void *userdata)
{
    (void)userdata;
    if (subscriber)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscriber = callback;
    *handle = (CUpti_SubscriberHandle)&subscriber;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle handle, CUpti_CallbackDomain domain)
{
    (void)handle;
    if (domain <= 0 || domain >= CUPTI_CB_DOMAIN_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    domains[domain] = enable != 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_UNKNOWN";
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    enabled[kind] = 1;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete)
{
    request_buffer = request;
    complete_buffer = complete;
    return CUPTI_SUCCESS;
}

/* Hands the current buffer back (lock held). */
static void complete_current(void)
{
    if (buffer && complete_buffer)
        complete_buffer(NULL, 0, buffer, buffer_size, buffer_used);
    buffer = NULL;
    buffer_used = 0;
}

/* Room for a record of `size` bytes in the current buffer (lock held). */
static void *reserve(size_t size)
{
    if (buffer && buffer_used + size > buffer_size)
        complete_current();
    if (!buffer) {
        size_t max_records = 0;
        request_buffer(&buffer, &buffer_size, &max_records);
        buffer_used = 0;
        if (!buffer || buffer_size < size)
            return NULL;
    }
    void *at = buffer + buffer_used;
    buffer_used += size;
    memset(at, 0, size);
    return at;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    pthread_mutex_lock(&lock);
    complete_current();
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

/* The size of each record kind this stand-in writes. */
static size_t record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel9);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    default: return 0;
    }
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **record)
{
    uint8_t *at = *record ? (uint8_t *)*record + record_size((*record)->kind) : buf;
    if (at >= buf + valid) {
        *record = NULL;
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    *record = (CUpti_Activity *)at;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped)
{
    (void)context;
    (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    *timestamp = now_ns();
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetContextId(CUcontext context, uint32_t *id)
{
    (void)context;
    *id = 1;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *id)
{
    (void)context;
    *id = 0;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetStreamId(CUcontext context, CUstream stream, uint32_t *id)
{
    (void)context;
    (void)stream;
    *id = 7;
    return CUPTI_SUCCESS;
}

/* An API call (`cbid`, `function`) of the runtime domain around `work`, which writes its
 * activity record (lock held) for correlation id `correlation`. */
static void api_call(CUpti_CallbackId cbid, const char *function, const char *symbol, void (*work)(uint32_t, const void *), const void *arg)
{
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    pthread_mutex_lock(&lock);
    uint32_t correlation = next_correlation++;
    pthread_mutex_unlock(&lock);
    data.functionName = function;
    data.symbolName = symbol;
    data.correlationId = correlation;
    if (subscriber && domains[CUPTI_CB_DOMAIN_RUNTIME_API]) {
        data.callbackSite = CUPTI_API_ENTER;
        subscriber(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
    }
    pthread_mutex_lock(&lock);
    work(correlation, arg);
    pthread_mutex_unlock(&lock);
    if (subscriber && domains[CUPTI_CB_DOMAIN_RUNTIME_API]) {
        data.callbackSite = CUPTI_API_EXIT;
        subscriber(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data);
    }
}

/* The device's next slot of `ns` (lock held): [start, end). */
static void device_slot(uint64_t ns, uint64_t *start, uint64_t *end)
{
    uint64_t now = now_ns();
    *start = now > device_free_at ? now : device_free_at;
    *end = *start + ns;
    device_free_at = *end;
}

struct launch { const char *kernel; uint64_t ns; };

static void launch_work(uint32_t correlation, const void *arg)
{
    const struct launch *l = arg;
    if (!enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
        return;
    CUpti_ActivityKernel9 *r = reserve(sizeof *r);
    if (!r)
        return;
    r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    device_slot(l->ns, &r->start, &r->end);
    r->completed = r->end;
    r->deviceId = 0;
    r->contextId = 1;
    r->streamId = 7;
    r->correlationId = correlation;
    r->name = l->kernel;
}

/* A kernel launch (cudaLaunchKernel) that runs `ns` on the device. */
void fake_launch(const char *kernel, uint64_t ns)
{
    struct launch l = { kernel, ns };
    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", kernel, launch_work, &l);
}

struct copy { int kind; uint64_t bytes, ns; };

static void copy_work(uint32_t correlation, const void *arg)
{
    const struct copy *c = arg;
    if (!enabled[CUPTI_ACTIVITY_KIND_MEMCPY])
        return;
    CUpti_ActivityMemcpy6 *r = reserve(sizeof *r);
    if (!r)
        return;
    r->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r->copyKind = (uint8_t)c->kind;
    r->bytes = c->bytes;
    device_slot(c->ns, &r->start, &r->end);
    r->deviceId = 0;
    r->contextId = 1;
    r->streamId = 7;
    r->correlationId = correlation;
}

/* A cudaMemcpy of `bytes` (1: host to device, 2: device to host) that
 * takes `ns` on the device. */
void fake_memcpy(int kind, uint64_t bytes, uint64_t ns)
{
    struct copy c = { kind, bytes, ns };
    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", NULL, copy_work, &c);
}

static void sync_work(uint32_t correlation, const void *arg)
{
    (void)arg;
    if (!enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION])
        return;
    CUpti_ActivitySynchronization2 *r = reserve(sizeof *r);
    if (!r)
        return;
    r->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    /* The host waits until the device has run what it was given. */
    r->start = now_ns();
    r->end = device_free_at > r->start ? device_free_at : r->start;
    r->correlationId = correlation;
    r->contextId = 1;
    r->streamId = 7;
}

/* cudaDeviceSynchronize: an API call and a context synchronisation. */
void fake_synchronize(void)
{
    api_call(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize", NULL, sync_work, NULL);
    if (subscriber && domains[CUPTI_CB_DOMAIN_SYNCHRONIZE]) {
        CUpti_SynchronizeData data = { (CUcontext)&lock, NULL };
        subscriber(NULL, CUPTI_CB_DOMAIN_SYNCHRONIZE, CUPTI_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, &data);
    }
}

/* cudaDeviceReset: the context is destroyed, and with it the records
 * CUPTI has not handed over yet (this stand-in drops them, so that a
 * client must collect them when told the context ends). */
void fake_device_reset(void)
{
    if (subscriber && domains[CUPTI_CB_DOMAIN_RESOURCE]) {
        CUpti_ResourceData data;
        memset(&data, 0, sizeof data);
        data.context = (CUcontext)&lock;
        subscriber(NULL, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &data);
    }
    pthread_mutex_lock(&lock);
    buffer_used = 0;
    pthread_mutex_unlock(&lock);
}
