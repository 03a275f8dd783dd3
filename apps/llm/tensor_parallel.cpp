// Tensor parallelism for the decoder: the ranks and the chain's collectives
// (tensor_parallel.h), and each rank's shard of the model and its weights (decoder.h).
#include "tensor_parallel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#ifdef LLM_WITH_MPI
#include <mpi.h>
#endif

#include "content_hash.h"
#include "decoder.h"
#include "spyre/spyre_runtime.h"

namespace llm {

ModelShape tensor_parallel_shard(const ModelShape &full, int tp, int rank) {
    auto refuse = [&](const std::string &why) {
        throw std::runtime_error("--tp " + std::to_string(tp) + " does not divide configuration " + full.name + ": " + why);
    };
    if (tp < 1 || rank < 0 || rank >= tp) refuse("rank " + std::to_string(rank) + " is not one of " + std::to_string(tp));
    if (full.qheads % tp != 0) {
        refuse(std::to_string(full.qheads) + " query heads do not split over " + std::to_string(tp) + " ranks");
    }
    if (full.kvheads % tp != 0 && tp % full.kvheads != 0) {
        refuse(std::to_string(full.kvheads) + " KV heads neither split over " + std::to_string(tp) +
               " ranks nor replicate evenly (tp must divide them or be a multiple of them)");
    }
    if (full.ffn % tp != 0) refuse("the MLP's " + std::to_string(full.ffn) + " columns do not split evenly");
    if ((full.ffn / tp) % kSwigluWeightBlock != 0) {
        refuse("a rank's " + std::to_string(full.ffn / tp) + " MLP columns are not whole blocks of " +
               std::to_string(kSwigluWeightBlock) + " (wgu's gate and up rows alternate in such blocks)");
    }
    ModelShape s = full;
    s.tp = tp;
    s.rank = rank;
    s.vocab_total = full.vocab_total ? full.vocab_total : full.vocab;
    s.qheads = full.qheads / tp;
    s.kvheads = full.kvheads >= tp ? full.kvheads / tp : 1;  // replicated: each rank keeps the KV head its queries read
    s.ffn = full.ffn / tp;
    s.vocab = (s.vocab_total + tp - 1) / tp;
    if (tp > 1) s.name = full.name + " tp" + std::to_string(tp);
    return s;
}

namespace {

// A new (fp16) tensor of `extents` whose slice [to, to + n) along `dim` is src's slice [from, from + n).
void copy_rows(const Tensor &src, int dim, int from, int n, Tensor &dst, int to) {
    if (n <= 0) return;
    Tensor part = src.cropped(dim, from, n);
    Tensor out = dst.cropped(dim, to, n);
    part.translate(dim, to - from);
    out.copy_from(part);
}

Tensor zeros(const std::vector<int> &extents) {
    Tensor t(kF16, extents);
    std::memset(t.data(), 0, t.size_in_bytes());
    return t;
}

}  // namespace

ShardedWeights::ShardedWeights(const WeightSource &full, const ModelShape &full_shape, const ModelShape &shard)
    : full_(full), f_(full_shape), s_(shard) {}

LayerWeights ShardedWeights::layer(int layer) const {
    const LayerWeights fl = full_.layer(layer);
    if (s_.tp == 1) return fl;
    const ModelShape &f = f_, &s = s_;
    const int D = f.head_dim, H = f.hidden, r = s.rank;
    const int q0 = r * s.qheads;             // this rank's first query head
    const int kv0 = q0 / f.group();          // the first KV head its query heads read
    LayerWeights l;
    l.attn_norm = fl.attn_norm;
    l.mlp_norm = fl.mlp_norm;
    // wqkv (N = [Q heads | K heads | V heads] x D, K = H): this rank's heads of each, in that order.
    l.wqkv = zeros({s.qkv_features(), H});
    copy_rows(fl.wqkv, 0, q0 * D, s.qheads * D, l.wqkv, 0);
    copy_rows(fl.wqkv, 0, (f.qheads + kv0) * D, s.kvheads * D, l.wqkv, s.qheads * D);
    copy_rows(fl.wqkv, 0, (f.qheads + f.kvheads + kv0) * D, s.kvheads * D, l.wqkv, (s.qheads + s.kvheads) * D);
    // wo (N = H, K = attention width): the rows of K this rank's heads produce.
    l.wo = zeros({H, s.attention_width()});
    copy_rows(fl.wo, 1, q0 * D, s.attention_width(), l.wo, 0);
    // wgu (N = 2F, the gate's and the up projection's rows alternating in blocks of
    // kSwigluWeightBlock): this rank's F / tp columns of each are one contiguous range of blocks.
    l.wgu = zeros({2 * s.ffn, H});
    copy_rows(fl.wgu, 0, 2 * r * s.ffn, 2 * s.ffn, l.wgu, 0);
    // wdown (N = H, K = F): this rank's columns of K.
    l.wdown = zeros({H, s.ffn});
    copy_rows(fl.wdown, 1, r * s.ffn, s.ffn, l.wdown, 0);
    return l;
}

OuterWeights ShardedWeights::outer() const {
    const OuterWeights full = full_.outer();
    if (s_.tp == 1) return full;
    OuterWeights w;
    w.embedding = full.embedding;
    w.final_norm = full.final_norm;
    // lm_head (N = vocabulary, K = H): this rank's slice, zero rows past the vocabulary.
    w.lm_head = zeros({s_.vocab, f_.hidden});
    const int v0 = s_.rank * s_.vocab;
    copy_rows(full.lm_head, 0, v0, std::min(s_.vocab, s_.vocab_total - v0), w.lm_head, 0);
    return w;
}

bool started_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

int ranks_in_job() {
    const char *n = std::getenv("OMPI_COMM_WORLD_SIZE");
    return n ? std::atoi(n) : 1;
}

#ifdef LLM_WITH_MPI

void check_ranks_agree(spyre_comm_t *comm, const std::string &what) {
    uint64_t mine = spyre_apps::content_hash(what);
    std::vector<uint64_t> all(spyre_comm_size(comm));
    if (MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD) != MPI_SUCCESS) {
        throw std::runtime_error("the ranks could not exchange their run descriptions");
    }
    std::string differ;
    for (size_t r = 1; r < all.size(); r++) {
        if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    }
    if (!differ.empty()) {
        throw std::runtime_error("rank(s) " + differ + " run another configuration than rank 0 (model, options or " +
                                 "machine description differ); every rank must run the same command and environment");
    }
}

spyre_comm_t *join_ranks(int *argc, char ***argv) {
    spyre_comm_t *comm = spyre_comm_world(argc, argv);
    if (!comm) throw std::runtime_error(std::string("cannot join the MPI job: ") + spyre_last_error());
    return comm;
}
void leave_ranks(spyre_comm_t *comm) {
    if (comm) spyre_comm_finalize(comm);
}
void abort_ranks(spyre_comm_t *, int exit_code) {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; if it did, the job must still end
}
int all_reduce_sum(spyre_comm_t *comm, halide_buffer_t *buf) { return spyre_all_reduce_sum(comm, nullptr, buf); }
int all_gather(spyre_comm_t *comm, const halide_buffer_t *send, halide_buffer_t *recv, int dim) {
    return spyre_all_gather(comm, nullptr, send, recv, dim);
}

#else

spyre_comm_t *join_ranks(int *, char ***) {
    throw std::runtime_error("this build has no MPI (Debian: openmpi-bin libopenmpi-dev), so no --tp above 1");
}
void leave_ranks(spyre_comm_t *) {}
void abort_ranks(spyre_comm_t *, int exit_code) { std::_Exit(exit_code); }
void check_ranks_agree(spyre_comm_t *, const std::string &) {}
int all_reduce_sum(spyre_comm_t *, halide_buffer_t *) { throw std::logic_error("no MPI in this build"); }
int all_gather(spyre_comm_t *, const halide_buffer_t *, halide_buffer_t *, int) {
    throw std::logic_error("no MPI in this build");
}

#endif

}  // namespace llm
