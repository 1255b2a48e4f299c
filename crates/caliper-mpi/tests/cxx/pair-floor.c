/* The least work that measures an MPI_Send/MPI_Recv pair as Caliper's
 * runtime-report,profile.mpi does, to set the wrappers' overhead against
 * (figures in the README): a PMPI wrapper of the two functions that makes
 * each call a region, and per begin or end only a thread-local pointer,
 * a TSC reading scaled to nanoseconds, a region stack, a memo of the last
 * child begun, and one aggregation row of min/max/sum/count updated with
 * the time since the previous snapshot. No configuration, no checks, no
 * output: not a profiler.
 *
 *   mpicc -O2 -fPIC -shared pair-floor.c -o libpair-floor.so
 *   mpirun -np 1 -x LD_PRELOAD=$PWD/libpair-floor.so ./mpi-bench-plain self 1000000
 *
 * where mpi-bench-plain is mpi-bench.cpp built with -DNO_CALIPER. Add
 * -ftls-model=initial-exec for the thread-local model of a program's own
 * code, -DNO_TSC to leave the TSC out. */

#include <mpi.h>
#include <stdint.h>
#include <x86intrin.h>

enum { DEPTH = 64, NODES = 1024 };

struct stat {
    uint64_t min, max, sum, n;
};

/* The child last begun under a node. */
struct memo {
    uint32_t parent, child;
    uint64_t attr, value;
};

struct thread {
    uint64_t attrs[DEPTH], values[DEPTH];
    uint32_t nodes[DEPTH];
    int depth;
    struct memo children[NODES];
    uint32_t next_node;
    /* Per node: count, duration (the row of its snapshots). */
    struct stat rows[NODES][2];
    uint64_t last, mult;
};

static struct thread the_thread = { .mult = (uint64_t)1 << 32, .next_node = 1 };
static __thread struct thread *current;

static inline uint64_t now_ns(const struct thread *t)
{
#ifdef NO_TSC
    return t->last + 17;
#else
    return (uint64_t)(((unsigned __int128)__rdtsc() * t->mult) >> 32);
#endif
}

/* The snapshot of an update at stack node `node`. */
static inline void snapshot(struct thread *t, uint32_t node, int end)
{
    uint64_t now = now_ns(t), duration = now - t->last;
    t->last = now;
    struct stat *row = t->rows[node % NODES];
    if (end)
        row[0].sum++, row[0].n++;
    if (duration < row[1].min || row[1].n == 0)
        row[1].min = duration;
    if (duration > row[1].max)
        row[1].max = duration;
    row[1].sum += duration;
    row[1].n++;
}

static void begin(uint64_t attr, uint64_t value)
{
    struct thread *t = current;
    if (!t)
        t = current = &the_thread;
    uint32_t parent = t->depth ? t->nodes[t->depth - 1] : 0;
    struct memo *m = &t->children[parent % NODES];
    if (!(m->child && m->parent == parent && m->attr == attr && m->value == value))
        *m = (struct memo){ parent, t->next_node++ % NODES, attr, value };
    snapshot(t, parent, 0);
    t->attrs[t->depth] = attr;
    t->values[t->depth] = value;
    t->nodes[t->depth] = m->child;
    t->depth++;
}

static void end(uint64_t attr)
{
    struct thread *t = current;
    if (!t || !t->depth || t->attrs[t->depth - 1] != attr)
        return;
    snapshot(t, t->nodes[t->depth - 1], 1);
    t->depth--;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    begin(1, 1);
    int result = PMPI_Send(buf, count, type, dest, tag, comm);
    end(1);
    return result;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    begin(1, 2);
    int result = PMPI_Recv(buf, count, type, source, tag, comm, status);
    end(1);
    return result;
}
