/* The interface between libcaliper-mpi and libcaliper (not the
 * reference's; programs do not call it). libcaliper-mpi holds the PMPI
 * wrappers, built against one MPI, and nothing of the runtime: it links
 * libcaliper and reports to its runtime through these functions, so that
 * a program linking either library or both, or preloading one, has one
 * runtime. The Rust side is the caliper-mpi-abi crate. */
#ifndef CALI_CALI_MPI_BINDING_H
#define CALI_CALI_MPI_BINDING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An MPI binding, handed to the runtime. Communicators are passed as
 * pointers to their handles (MPI_Comm *; NULL: Caliper's own duplicate of
 * MPI_COMM_WORLD). */
typedef struct cali_mpi_binding {
    size_t size;               /* sizeof(cali_mpi_binding_t), checked */
    const char *functions;     /* the wrapped functions' names, each NUL-terminated */
    size_t function_count;
    void (*set_enabled)(size_t index, int on);
    int (*state)(void);        /* 0 not initialised, 1 running, 2 finalised */
    int (*handle_size)(void);
    int (*is_null)(const void *comm);
    int (*rank)(const void *comm);
    int (*comm_size)(const void *comm);
    int (*send)(const void *comm, int dest, const void *buf, int len);
    int (*recv)(const void *comm, int source, void *buf, int len);
} cali_mpi_binding_t;

/* Registers the binding (the first registration counts); libcaliper-mpi
 * also exports `const cali_mpi_binding_t *cali_mpi_binding(void)`, which
 * libcaliper looks up when it starts first. */
int cali_mpi_binding_register(const cali_mpi_binding_t *binding);

/* Around a wrapped call: the region of function `index`. */
const void *cali_mpi_call_begin(size_t index);
void cali_mpi_call_end(const void *begun);

/* After MPI_Init; before MPI_Finalize. */
void cali_mpi_initialized(void);
void cali_mpi_finalizing(void);

/* Message reports: flags 1 (tracing) and 2 (pattern), then what a
 * completed call moved (root < 0: none). */
int cali_mpi_message_flags(void);
void cali_mpi_message_sent(int64_t dst, int64_t tag, int64_t bytes);
void cali_mpi_message_received(int64_t src, int64_t tag, int64_t bytes);
void cali_mpi_message_collective(int64_t kind, int64_t root, int64_t bytes);
void cali_mpi_irecv_wait_gap(uint64_t gap_ns);
uint64_t cali_mpi_now_ns(void);

/* Runs flush(arg) with cross-rank outputs reduced over *comm (a pointer
 * to an MPI_Comm; MPI_COMM_NULL: this rank alone); the second form hands
 * what it writes to write(stream, text, length). The C++ classes of
 * caliper/MpiChannelManager.h and caliper/CollectiveOutputChannel.h are
 * built on them. */
void cali_mpi_flush_on(const void *comm, void (*flush)(void *), void *arg);
void cali_mpi_flush_to_stream(const void *comm, void (*flush)(void *), void *arg,
                              void (*write)(void *, const char *, size_t), void *stream);

#ifdef __cplusplus
}
#endif

#endif
