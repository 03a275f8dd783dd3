// Tensor parallelism for the decoder: one MPI rank per simulated card
// (libspyre_collectives). The shard of the model a rank holds is decoder.h's
// tensor_parallel_shard; its weights are a ShardedWeights source (below); the
// rest of this file is the ranks themselves: joining them and the two
// collectives the chain uses. Built without MPI (no
// libspyre_collectives), a run with tp > 1 is refused with that reason.
#pragma once

#include <string>

#include "model_weights.h"
#include "spyre/spyre_collectives.h"

namespace llm {

struct ModelShape;

// The rows and columns of the whole model's weights (`full`, of shape `full_shape`)
// that rank `shard.rank`'s shard holds, cut from each piece as it is asked for.
class ShardedWeights : public WeightSource {
public:
    ShardedWeights(const WeightSource &full, const ModelShape &full_shape, const ModelShape &shard);
    LayerWeights layer(int l) const override;
    OuterWeights outer() const override;

private:
    const WeightSource &full_;
    const ModelShape &f_, &s_;
};

// Joins the MPI job (MPI_Init through spyre_comm_world). Throws with the reason if
// this build has no MPI or the job cannot start.
spyre_comm_t *join_ranks(int *argc, char ***argv);
void leave_ranks(spyre_comm_t *comm);
// Ends the whole job (MPI_Abort): a rank that cannot go on must not leave the others waiting.
[[noreturn]] void abort_ranks(spyre_comm_t *comm, int exit_code);
// Whether this process was started by mpirun (Open MPI's environment), so a run
// that forgot --tp can say so instead of running N copies of a one-card model.
bool started_by_mpirun();
int ranks_in_job();  // OMPI_COMM_WORLD_SIZE, or 1

// Every rank's run description (`what`: the model, options and machine) must be the same:
// throws on every rank, naming the ranks that differ from rank 0, before any work.
void check_ranks_agree(spyre_comm_t *comm, const std::string &what);

// The collectives of the chain; the runtime's status (0, or an error code with spyre_last_error()).
int all_reduce_sum(spyre_comm_t *comm, halide_buffer_t *buf);
int all_gather(spyre_comm_t *comm, const halide_buffer_t *send, halide_buffer_t *recv, int dim);

}  // namespace llm
