/* An NVTX injection library, as NVTX_INJECTION64_PATH names one (Nsight
 * Systems' is another): InitializeInjectionNvtx2 asks the caller for its
 * callbacks table, fills the range push/pop and domain-create slots with
 * functions of its own, and those write every call to the file
 * $NVTX_RECORD_FILE, one line each:
 *   create <domain>
 *   push <domain> <message> <color>
 *   pop <domain> <message of the range popped>
 * The default domain is written "(default)". Ranges are per thread, as
 * NVTX's are: the lines of each thread but the first to push start with
 * its number ("1 push ..."). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVTX v3's layouts and ids (nvToolsExt.h, nvtxDetail/nvtxTypes.h). */
typedef void (*FunctionPointer)(void);
typedef FunctionPointer** FunctionTable; /* array of pointers to function pointers */
typedef struct {
    size_t struct_size;
    int (*GetModuleFunctionTable)(int module, FunctionTable* table, unsigned* size);
} CallbacksTable;
typedef const void* (*GetExportTable)(uint32_t id);
typedef struct {
    uint16_t version, size;
    uint32_t category;
    int32_t colorType;
    uint32_t color;
    int32_t payloadType, reserved0;
    uint64_t payload;
    int32_t messageType;
    const char* message;
} EventAttributes;

enum { ETID_CALLBACKS = 1, MODULE_CORE = 1, MODULE_CORE2 = 5 };
enum { CORE_RangePushEx = 8, CORE_RangePop = 11 };
enum { CORE2_DomainRangePushEx = 4, CORE2_DomainRangePop = 5, CORE2_DomainCreateA = 12 };

typedef struct Domain {
    char name[64];
} Domain;

static Domain default_domain = { "(default)" };
static FILE* out;
static atomic_int threads;

/* The calling thread's open ranges, innermost last, and its number. */
static __thread struct {
    Domain* domain;
    char* message;
} open[64];
static __thread int depth, number = -1;

/* The calling thread's line prefix. */
static const char* prefix(void)
{
    static __thread char text[16];
    if (number < 0) {
        number = atomic_fetch_add(&threads, 1);
        if (number > 0)
            snprintf(text, sizeof(text), "%d ", number);
    }
    return text;
}

static int push(Domain* d, const EventAttributes* a)
{
    if (a->version != 3 || a->size != sizeof(EventAttributes) || a->messageType != 1 || a->colorType != 1) {
        fprintf(out, "bad attributes %u %u %d %d\n", a->version, a->size, a->messageType, a->colorType);
        return -1;
    }
    fprintf(out, "%spush %s %s %08x\n", prefix(), d->name, a->message, a->color);
    if (depth == 64)
        return -1;
    open[depth].domain = d;
    open[depth].message = strdup(a->message);
    return depth++;
}

/* Pops the domain's innermost range on the calling thread. */
static int pop(Domain* d)
{
    int at = depth - 1;
    while (at >= 0 && open[at].domain != d)
        --at;
    if (at < 0) {
        fprintf(out, "%spop %s (empty)\n", prefix(), d->name);
        return -1;
    }
    fprintf(out, "%spop %s %s\n", prefix(), d->name, open[at].message);
    free(open[at].message);
    memmove(&open[at], &open[at + 1], (depth - at - 1) * sizeof(open[0]));
    return --depth;
}

static int range_push_ex(const EventAttributes* a) { return push(&default_domain, a); }
static int range_pop(void) { return pop(&default_domain); }
static int domain_range_push_ex(Domain* d, const EventAttributes* a) { return push(d ? d : &default_domain, a); }
static int domain_range_pop(Domain* d) { return pop(d ? d : &default_domain); }

static Domain* domain_create(const char* name)
{
    Domain* d = calloc(1, sizeof(Domain));
    snprintf(d->name, sizeof(d->name), "%s", name);
    fprintf(out, "create %s\n", name);
    return d;
}

static int fill(CallbacksTable const* callbacks, int module, unsigned id, FunctionPointer f)
{
    FunctionTable table = 0;
    unsigned size = 0;
    if (!callbacks->GetModuleFunctionTable(module, &table, &size) || id >= size || !table[id])
        return 0;
    *table[id] = f;
    return 1;
}

int InitializeInjectionNvtx2(GetExportTable get)
{
    const char* path = getenv("NVTX_RECORD_FILE");
    out = fopen(path ? path : "/dev/null", "w");
    if (!out)
        return 0;
    setvbuf(out, 0, _IOLBF, 0);
    CallbacksTable const* callbacks = get(ETID_CALLBACKS);
    if (!callbacks || callbacks->struct_size < sizeof(CallbacksTable))
        return 0;
    return fill(callbacks, MODULE_CORE, CORE_RangePushEx, (FunctionPointer)range_push_ex)
        && fill(callbacks, MODULE_CORE, CORE_RangePop, (FunctionPointer)range_pop)
        && fill(callbacks, MODULE_CORE2, CORE2_DomainCreateA, (FunctionPointer)domain_create)
        && fill(callbacks, MODULE_CORE2, CORE2_DomainRangePushEx, (FunctionPointer)domain_range_push_ex)
        && fill(callbacks, MODULE_CORE2, CORE2_DomainRangePop, (FunctionPointer)domain_range_pop);
}
