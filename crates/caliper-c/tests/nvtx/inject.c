/* An NVTX injection library, as NVTX_INJECTION64_PATH names one (Nsight
 * Systems' is another): InitializeInjectionNvtx2 asks the caller for its
 * callbacks table, fills the range push/pop and domain-create slots with
 * functions of its own, and those write every call to the file
 * $NVTX_RECORD_FILE, one line each:
 *   create <domain>
 *   push <domain> <message> <color>
 *   pop <domain> <message of the range popped>
 * The default domain is written "(default)". Single-threaded. */
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
    const char* open[64]; /* messages of open ranges */
    int depth;
} Domain;

static Domain default_domain = { "(default)", { 0 }, 0 };
static FILE* out;

static int push(Domain* d, const EventAttributes* a)
{
    if (a->version != 3 || a->size != sizeof(EventAttributes) || a->messageType != 1 || a->colorType != 1) {
        fprintf(out, "bad attributes %u %u %d %d\n", a->version, a->size, a->messageType, a->colorType);
        return -1;
    }
    fprintf(out, "push %s %s %08x\n", d->name, a->message, a->color);
    if (d->depth < 64)
        d->open[d->depth] = strdup(a->message);
    return d->depth++;
}

static int pop(Domain* d)
{
    if (d->depth == 0) {
        fprintf(out, "pop %s (empty)\n", d->name);
        return -1;
    }
    --d->depth;
    if (d->depth < 64) {
        fprintf(out, "pop %s %s\n", d->name, d->open[d->depth]);
        free((void*)d->open[d->depth]);
    } else {
        fprintf(out, "pop %s ?\n", d->name);
    }
    return d->depth;
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
