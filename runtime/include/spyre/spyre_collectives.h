/* Collectives among simulated Spyre cards: one card per MPI rank
 * (libspyre_collectives, built on Open MPI; docs/runtime.md "Several cards").
 *
 *   spyre_comm_t *comm = spyre_comm_world(&argc, &argv);   // MPI_Init if needed
 *   spyre_all_reduce_sum(comm, NULL, partial);             // partial: a Spyre device buffer
 *   spyre_comm_finalize(comm);
 *   // mpirun -np 4 ./app
 *
 * Data moves through MPI between the ranks' host processes and lands in each
 * rank's simulated card; the results are exact and identical on every rank:
 * sums accumulate in rank order in a wider type (float16 in float32, float32
 * in float64, int32 in two's-complement int32) and round once, so an
 * all-reduce of fp16 partial sums equals the single-card sum of the same
 * split. Time comes from the card-to-card link model (spyre/card_link.h,
 * machine parameters host_link_gbps, card_link_latency_us,
 * card_link_peer_to_peer): a collective starts on every rank when the last
 * rank reaches it (the simulated clocks, spyre_simulated_clock_us, are
 * exchanged), so every rank's clock agrees afterwards. The waiting is charged
 * to the profile entry "collective wait", the link time to an entry named
 * after the collective ("all_reduce", ...). In timing-only mode no values move
 * but the ranks still synchronise and charge the same time.
 *
 * Every rank must call the same collectives in the same order with matching
 * tensors; a mismatch (dtype, shape, root, dimension, timing-only mode) is
 * found before anything moves and fails on every rank with
 * spyre_error_bad_argument naming the ranks and what differs. A rank whose
 * own arguments are refused (or whose tensor cannot be read) fails with its
 * own message, and every other rank fails too, naming it: none is left
 * waiting. Needs MPI at MPI_THREAD_SERIALIZED or above. `stream` may
 * be NULL (the call runs now) or a stream (the collective is enqueued and
 * orders with the stream's kernels and copies; errors surface at
 * spyre_stream_synchronize). Buffers are live Spyre device buffers (whole
 * tensors or views) of float16, float32 or int32 (broadcast, send and recv
 * take int8 too). A rank that exits or aborts ends the job: mpirun reports
 * which rank and stops the others. */
#ifndef SPYRE_COLLECTIVES_H
#define SPYRE_COLLECTIVES_H

#include <stdint.h>

#include "HalideRuntime.h"
#include "spyre/spyre_stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spyre_comm spyre_comm_t;

/* The communicator of all ranks (MPI_COMM_WORLD). Initializes MPI
 * (MPI_Init_thread, MPI_THREAD_MULTIPLE) if the program has not; argc and
 * argv may be NULL. NULL on failure (spyre_last_error() says why). */
spyre_comm_t *spyre_comm_world(int *argc, char ***argv);
int spyre_comm_rank(const spyre_comm_t *comm);
int spyre_comm_size(const spyre_comm_t *comm);
/* Frees the communicator; finalizes MPI if spyre_comm_world initialized it. */
int spyre_comm_finalize(spyre_comm_t *comm);

/* buf = the sum of every rank's buf, in place. */
int spyre_all_reduce_sum(spyre_comm_t *comm, spyre_stream_t *stream, halide_buffer_t *buf);
/* recv = the ranks' send tensors concatenated along Halide dimension `dim`
 * in rank order (recv's extent there is ranks x send's; the others equal). */
int spyre_all_gather(spyre_comm_t *comm, spyre_stream_t *stream, const halide_buffer_t *send, halide_buffer_t *recv,
                     int dim);
/* recv = block `rank` along Halide dimension `dim` of the sum of every rank's
 * send (send's extent there is ranks x recv's; the others equal). */
int spyre_reduce_scatter_sum(spyre_comm_t *comm, spyre_stream_t *stream, const halide_buffer_t *send,
                             halide_buffer_t *recv, int dim);
/* buf on every rank = buf on `root`. */
int spyre_broadcast(spyre_comm_t *comm, spyre_stream_t *stream, halide_buffer_t *buf, int root);
/* Point to point: a send to `peer` matches that peer's recv from this rank.
 * A send returns only once the peer's matching recv has started (the two
 * check each other's tensor first), so two ranks that both send before they
 * receive wait for each other: order a swap as one sends while the other
 * receives, then the other way round. */
int spyre_send(spyre_comm_t *comm, spyre_stream_t *stream, const halide_buffer_t *buf, int peer);
int spyre_recv(spyre_comm_t *comm, spyre_stream_t *stream, halide_buffer_t *buf, int peer);

/* Figures of this rank's most recent collective. */
typedef struct spyre_collective_stats {
    char collective[32];  /* "all_reduce", ... */
    char algorithm[32];   /* the link model's choice: "ring", "recursive doubling", ... */
    int32_t ranks;
    uint64_t bytes;       /* one rank's input (card_link.h says which for each collective) */
    double link_us;       /* the collective's own simulated time */
    double wait_us;       /* this rank's wait for the slowest rank */
} spyre_collective_stats;
int spyre_get_last_collective_stats(spyre_collective_stats *out);

#ifdef __cplusplus
}
#endif

#endif
