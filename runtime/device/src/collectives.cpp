// libspyre_collectives: collectives among simulated Spyre cards over MPI
// (spyre_collectives.h; the link model is card_link.h).
//
// Each collective runs in three steps on every rank:
//   1. agree: MPI_Allgather of a fixed-size descriptor (the collective, dtype,
//      shape, root or dimension, timing-only mode, the rank's simulated clock);
//      any disagreement fails on every rank, naming the ranks, before data moves;
//   2. move: the values are read from the card uncharged
//      (spyre_device_read_values), exchanged through MPI as raw bytes, combined
//      on the host in rank order in a wider type, rounded once and written back
//      (skipped in timing-only mode);
//   3. charge: the wait until the slowest rank's clock ("collective wait") and
//      the link model's time (an entry named after the collective), so every
//      rank's clock ends at max(clocks) + the collective's time.
// Assumes: MPI with at least MPI_THREAD_SERIALIZED (one collective at a time
// per process is enforced by a mutex); every rank runs the same machine
// description (the descriptor carries its structural fingerprint and link parameters).
#include "spyre/spyre_collectives.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "device_state.h"
#include "spyre/card_link.h"
#include "spyre/dtype.h"
#include "spyre/machine.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

struct spyre_comm {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    bool initialized_mpi = false;
};

namespace {

using namespace spyre;

std::mutex g_collective_mutex;  // one collective at a time in this process
spyre_collective_stats g_last_stats{};
bool g_have_stats = false;

constexpr int kMaxDims = SPYRE_MAX_DIMENSIONS;

// What every rank must agree on (plain data, exchanged as bytes).
struct Descriptor {
    int32_t collective = 0;
    int32_t dtype = -1;  // spyre::DType
    int32_t dims = 0;
    int32_t extent[kMaxDims] = {};
    int32_t argument = 0;  // root, dimension or peer
    int32_t timing_only = 0;
    uint64_t machine_fingerprint = 0;
    double link_latency_us = 0;
    double link_gbps = 0;
    int64_t peer_to_peer = 0;
    double clock_us = 0;  // not compared: the wait is computed from it
    int32_t local_error = 0;  // this rank's own checks failed with this code (its message is its own)
};

// A check of this rank's own arguments, recorded rather than thrown, so that every rank still
// takes part in the agreement and all of them fail together (a rank that returned early would
// leave the others waiting in MPI for ever).
struct LocalCheck {
    int code = 0;
    std::string message;
    template<typename F>
    void run(F &&f) {
        if (code != 0) return;
        try {
            f();
        } catch (const RuntimeError &e) {
            code = e.code;
            message = e.what();
        } catch (const std::exception &e) {
            code = spyre_error_bad_argument;
            message = e.what();
        }
    }
};

std::string describe(const Descriptor &d) {
    std::ostringstream s;
    s << dtype_name((DType)d.dtype) << " [";
    for (int i = 0; i < d.dims; i++) s << (i ? ", " : "") << d.extent[i];
    s << "]";
    return s.str();
}

int64_t element_count(const halide_buffer_t *b) {
    int64_t n = 1;
    for (int i = 0; i < b->dimensions; i++) n *= b->dim[i].extent;
    return n;
}

Descriptor describe_buffer(Collective c, const halide_buffer_t *buf, int argument, const char *where) {
    if (!buf) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": null buffer");
    spyre_device_layout layout{};
    if (spyre_device_get_layout(buf, &layout, nullptr) != 0) {
        throw RuntimeError(spyre_error_bad_argument,
                           std::string(where) + ": the buffer is not a live Spyre device buffer (allocate it with "
                                                "device_malloc(spyre_device_interface()) first)");
    }
    Descriptor d;
    d.collective = (int32_t)c;
    DType t;
    if (!dtype_of(buf->type, &t)) {
        throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": type " + halide_type_name(buf->type) +
                                                         " is not a Spyre device type");
    }
    d.dtype = (int32_t)t;
    d.dims = buf->dimensions;
    for (int i = 0; i < buf->dimensions && i < kMaxDims; i++) d.extent[i] = buf->dim[i].extent;
    d.argument = argument;
    d.timing_only = spyre_timing_only();
    const MachineDescription &m = default_machine();
    d.machine_fingerprint = m.structural_fingerprint();
    d.link_latency_us = m.card_link_latency_us;
    d.link_gbps = m.host_link_gbps;
    d.peer_to_peer = m.card_link_peer_to_peer;
    d.clock_us = spyre_simulated_clock_us();
    return d;
}

void check_mpi(int code, const char *where) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": MPI: " + std::string(text, (size_t)length));
}

// Step 1: every rank's descriptor; fails on every rank if they disagree (clocks aside).
std::vector<Descriptor> agree(const spyre_comm *comm, Descriptor mine, const LocalCheck &check, const char *where) {
    mine.local_error = check.code;
    std::vector<Descriptor> all((size_t)comm->size);
    check_mpi(MPI_Allgather(&mine, (int)sizeof(Descriptor), MPI_BYTE, all.data(), (int)sizeof(Descriptor), MPI_BYTE,
                            comm->comm),
              where);
    if (check.code != 0) throw RuntimeError(check.code, check.message);
    for (int r = 0; r < comm->size; r++) {
        if (all[(size_t)r].local_error != 0) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": rank " + std::to_string(r) +
                                                             " refused its own arguments (its message says why); no rank "
                                                             "moved any data");
        }
    }
    for (int r = 1; r < comm->size; r++) {
        const Descriptor &a = all[0], &b = all[(size_t)r];
        std::string what;
        if (a.collective != b.collective) {
            what = std::string("rank 0 called ") + collective_name((Collective)a.collective) + ", rank " +
                   std::to_string(r) + " " + collective_name((Collective)b.collective);
        } else if (a.dtype != b.dtype || a.dims != b.dims ||
                   !std::equal(a.extent, a.extent + kMaxDims, b.extent)) {
            what = "rank 0 has " + describe(a) + ", rank " + std::to_string(r) + " " + describe(b);
        } else if (a.argument != b.argument) {
            what = "rank 0 passed " + std::to_string(a.argument) + " as the root or dimension, rank " +
                   std::to_string(r) + " " + std::to_string(b.argument);
        } else if (a.timing_only != b.timing_only) {
            what = "timing-only mode is " + std::string(a.timing_only ? "on" : "off") + " on rank 0 and " +
                   (b.timing_only ? "on" : "off") + " on rank " + std::to_string(r);
        } else if (a.machine_fingerprint != b.machine_fingerprint || a.link_latency_us != b.link_latency_us ||
                   a.link_gbps != b.link_gbps || a.peer_to_peer != b.peer_to_peer) {
            what = "ranks 0 and " + std::to_string(r) + " run different machine descriptions";
        }
        if (!what.empty()) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": the ranks disagree: " + what);
        }
    }
    return all;
}

// Step 3: the wait for the slowest rank, then the collective's own time.
void charge(const spyre_comm *comm, Collective c, const std::vector<Descriptor> &all, double bytes, double own_clock) {
    double start = own_clock;
    for (const Descriptor &d : all) start = std::max(start, d.clock_us);
    const CollectiveCost cost = collective_cost(default_machine(), c, comm->size, bytes);
    const double wait = start - own_clock;
    if (wait > 0) spyre_profile_record("collective wait", 0, 0, wait, "slowest rank");
    spyre_profile_record(collective_name(c), (uint64_t)bytes, (uint64_t)bytes, cost.us, "card link");
    spyre_collective_stats s{};
    std::snprintf(s.collective, sizeof s.collective, "%s", collective_name(c));
    std::snprintf(s.algorithm, sizeof s.algorithm, "%s", cost.algorithm.c_str());
    s.ranks = comm->size;
    s.bytes = (uint64_t)bytes;
    s.link_us = cost.us;
    s.wait_us = wait;
    g_last_stats = s;
    g_have_stats = true;
}

// Sums `ranks` dense arrays of `n` elements (rank order) into out: float16 in
// float32, float32 in float64, int32 with two's-complement wrap-around; rounded once.
void sum_in_rank_order(DType t, const uint8_t *data, int ranks, int64_t n, uint8_t *out) {
    const int64_t eb = dtype_bytes(t);
    for (int64_t i = 0; i < n; i++) {
        if (t == DType::F16) {
            float acc = 0;
            for (int r = 0; r < ranks; r++) {
                uint16_t h;
                std::memcpy(&h, data + ((int64_t)r * n + i) * eb, 2);
                acc += half_to_float(h);
            }
            const uint16_t h = float_to_half(acc);
            std::memcpy(out + i * eb, &h, 2);
        } else if (t == DType::F32) {
            double acc = 0;
            for (int r = 0; r < ranks; r++) {
                float f;
                std::memcpy(&f, data + ((int64_t)r * n + i) * eb, 4);
                acc += f;
            }
            const float f = (float)acc;
            std::memcpy(out + i * eb, &f, 4);
        } else if (t == DType::I32) {
            uint32_t acc = 0;
            for (int r = 0; r < ranks; r++) {
                int32_t v;
                std::memcpy(&v, data + ((int64_t)r * n + i) * eb, 4);
                acc += (uint32_t)v;
            }
            std::memcpy(out + i * eb, &acc, 4);
        } else {
            throw RuntimeError(spyre_error_bad_argument,
                               std::string("sums of ") + dtype_name(t) + " tensors are not supported (float16, float32, int32)");
        }
    }
}

void read_values(const halide_buffer_t *buf, std::vector<uint8_t> &dense, const char *where) {
    dense.resize((size_t)(element_count(buf) * ((buf->type.bits + 7) / 8)));
    if (int r = spyre_device_read_values(nullptr, buf, dense.data())) {
        throw RuntimeError(r, std::string(where) + ": " + spyre_last_error());
    }
}

// Reads this rank's tensor (when `buf` is set), then agrees with every rank that all reads
// worked before any data moves: one rank failing fails them all, none is left waiting.
void read_agreed(const spyre_comm *comm, const halide_buffer_t *buf, std::vector<uint8_t> &dense, const char *where) {
    LocalCheck check;
    if (buf) check.run([&] { read_values(buf, dense, where); });
    const int failed = check.code != 0 ? 1 : 0;
    int any = 0;
    check_mpi(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm->comm), where);
    if (failed) throw RuntimeError(check.code, check.message);
    if (any) {
        throw RuntimeError(spyre_error_bad_argument,
                           std::string(where) + ": another rank could not read its tensor (its message says why)");
    }
}

// Writes the result into the card; the buffer is then device-dirty, as after a kernel.
void write_values(halide_buffer_t *buf, const std::vector<uint8_t> &dense, const char *where) {
    if (int r = spyre_device_write_values(nullptr, buf, dense.data())) {
        throw RuntimeError(r, std::string(where) + ": " + spyre_last_error());
    }
    buf->set_host_dirty(false);
    buf->set_device_dirty(true);
}

// Timing-only: nothing is computed, so the result tensor holds no values (reading it fails
// until it is written in functional mode), as after a timing-only kernel.
// (A timing-only copy into the device needs no host memory and marks the tensor so.)
void mark_without_values(halide_buffer_t *buf, const char *where) {
    halide_buffer_t b = *buf;
    b.host = nullptr;
    b.flags = 0;
    b.set_host_dirty(true);
    UnchargedTransfers uncharged;
    if (int r = spyre_device_interface()->copy_to_device(nullptr, &b, spyre_device_interface())) {
        throw RuntimeError(r, std::string(where) + ": " + spyre_last_error());
    }
    buf->set_host_dirty(false);
    buf->set_device_dirty(true);
}

// The dense blocks of a tensor along Halide dimension `dim` cut into `pieces`:
// element (.., x_dim, ..) is in piece x_dim / (extent / pieces).
struct Blocks {
    int64_t inner = 1, piece = 1, outer = 1;  // elements below dim, the piece's extent, dims above
    Blocks(const halide_buffer_t *b, int dim, int pieces) {
        for (int d = 0; d < dim; d++) inner *= b->dim[d].extent;
        piece = b->dim[dim].extent / pieces;
        for (int d = dim + 1; d < b->dimensions; d++) outer *= b->dim[d].extent;
    }
};

template<typename Body>
int run(spyre_comm *comm, spyre_stream_t *stream, const char *where, Body body) {
    if (!comm) {
        set_last_error(std::string(where) + ": null communicator");
        return spyre_error_bad_argument;
    }
    auto call = [comm, where, body]() -> int {
        std::lock_guard<std::mutex> lock(g_collective_mutex);
        return guarded(nullptr, where, [&] {
            body();
            return 0;
        });
    };
    if (!stream) return call();
    struct Thunk {
        std::function<int()> f;
    };
    auto *thunk = new Thunk{call};
    const int r = spyre_stream_enqueue_kernel(
        stream, [](void *p) { return static_cast<Thunk *>(p)->f(); }, thunk,
        [](void *p) { delete static_cast<Thunk *>(p); });
    if (r != 0) delete thunk;
    return r;
}

void check_dim(const halide_buffer_t *buf, int dim, const char *where) {
    if (dim < 0 || dim >= buf->dimensions) {
        throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": dimension " + std::to_string(dim) +
                                                         " of a tensor of " + std::to_string(buf->dimensions) + " dimensions");
    }
}

// send and recv of all_gather / reduce_scatter: same dtype and rank, `big` = ranks x `small`
// along dim, equal elsewhere.
void check_pair(const halide_buffer_t *small, const halide_buffer_t *big, int dim, int ranks, const char *where) {
    bool ok = small->dimensions == big->dimensions && small->type == big->type;
    for (int d = 0; ok && d < small->dimensions; d++) {
        ok = big->dim[d].extent == (d == dim ? ranks : 1) * small->dim[d].extent;
    }
    if (!ok) {
        throw RuntimeError(spyre_error_buffer_mismatch,
                           std::string(where) + ": the larger tensor must have " + std::to_string(ranks) +
                               " (the ranks) times the other's extent along dimension " + std::to_string(dim) +
                               " and the same type and extents elsewhere");
    }
}

// The descriptor of a collective between two tensors of one dtype and rank whose extents agree
// except along `dim`, where `big` has `ranks` times `small`'s (all_gather: recv is big;
// reduce_scatter: send is), described by `send`.
Descriptor describe_pair(Collective c, const halide_buffer_t *small, const halide_buffer_t *big,
                         const halide_buffer_t *send, int dim, int ranks, const char *where) {
    const Descriptor d = describe_buffer(c, send, dim, where);
    describe_buffer(c, send == small ? big : small, dim, where);  // the other one is a live device buffer too
    check_dim(send, dim, where);
    check_pair(small, big, dim, ranks, where);
    return d;
}

}  // namespace

extern "C" {

spyre_comm_t *spyre_comm_world(int *argc, char ***argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    auto *comm = new spyre_comm;
    if (!initialized) {
        int provided = 0;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            set_last_error("spyre_comm_world: MPI_Init_thread failed");
            delete comm;
            return nullptr;
        }
        comm->initialized_mpi = true;
    }
    // Stream collectives call MPI from the stream's worker thread; one collective at a time per
    // process (g_collective_mutex) needs at least MPI_THREAD_SERIALIZED.
    int level = 0;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_SERIALIZED) {
        set_last_error("spyre_comm_world: MPI was initialized below MPI_THREAD_SERIALIZED, which collectives on "
                       "streams need; initialize it with MPI_Init_thread(MPI_THREAD_SERIALIZED or higher)");
        if (comm->initialized_mpi) MPI_Finalize();
        delete comm;
        return nullptr;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm->comm);
    MPI_Comm_set_errhandler(comm->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm->comm, &comm->rank);
    MPI_Comm_size(comm->comm, &comm->size);
    return comm;
}

int spyre_comm_rank(const spyre_comm_t *comm) { return comm ? comm->rank : -1; }
int spyre_comm_size(const spyre_comm_t *comm) { return comm ? comm->size : -1; }

int spyre_comm_finalize(spyre_comm_t *comm) {
    if (!comm) return spyre_error_bad_argument;
    MPI_Comm_free(&comm->comm);
    if (comm->initialized_mpi) MPI_Finalize();
    delete comm;
    return 0;
}

int spyre_all_reduce_sum(spyre_comm_t *comm, spyre_stream_t *stream, halide_buffer_t *buf) {
    return run(comm, stream, "spyre_all_reduce_sum", [=] {
        const char *where = "spyre_all_reduce_sum";
        LocalCheck check;
        Descriptor mine;
        check.run([&] { mine = describe_buffer(Collective::AllReduce, buf, 0, where); });
        const std::vector<Descriptor> all = agree(comm, mine, check, where);
        const DType t = (DType)mine.dtype;
        const int64_t n = element_count(buf), bytes = n * dtype_bytes(t);
        if (t == DType::I8) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": int8 sums are not supported");
        if (!mine.timing_only) {
            std::vector<uint8_t> local, gathered((size_t)(bytes * comm->size)), result((size_t)bytes);
            read_agreed(comm, buf, local, where);
            check_mpi(MPI_Allgather(local.data(), (int)bytes, MPI_BYTE, gathered.data(), (int)bytes, MPI_BYTE, comm->comm),
                      where);
            sum_in_rank_order(t, gathered.data(), comm->size, n, result.data());
            write_values(buf, result, where);
        } else {
            mark_without_values(buf, where);
        }
        charge(comm, Collective::AllReduce, all, (double)bytes, mine.clock_us);
    });
}

int spyre_all_gather(spyre_comm_t *comm, spyre_stream_t *stream, const halide_buffer_t *send, halide_buffer_t *recv,
                     int dim) {
    return run(comm, stream, "spyre_all_gather", [=] {
        const char *where = "spyre_all_gather";
        LocalCheck check;
        Descriptor mine;
        check.run([&] { mine = describe_pair(Collective::AllGather, send, recv, send, dim, comm->size, where); });
        const std::vector<Descriptor> all = agree(comm, mine, check, where);
        const int64_t eb = dtype_bytes((DType)mine.dtype);
        const int64_t bytes = element_count(send) * eb;
        if (!mine.timing_only) {
            std::vector<uint8_t> local, gathered((size_t)(bytes * comm->size)), result((size_t)(bytes * comm->size));
            read_agreed(comm, send, local, where);
            check_mpi(MPI_Allgather(local.data(), (int)bytes, MPI_BYTE, gathered.data(), (int)bytes, MPI_BYTE, comm->comm),
                      where);
            const Blocks b(send, dim, 1);
            const int64_t run_bytes = b.inner * b.piece * eb;
            for (int64_t o = 0; o < b.outer; o++) {
                for (int r = 0; r < comm->size; r++) {
                    std::memcpy(result.data() + (o * comm->size + r) * run_bytes,
                                gathered.data() + r * bytes + o * run_bytes, (size_t)run_bytes);
                }
            }
            write_values(recv, result, where);
        } else {
            mark_without_values(recv, where);
        }
        charge(comm, Collective::AllGather, all, (double)bytes, mine.clock_us);
    });
}

int spyre_reduce_scatter_sum(spyre_comm_t *comm, spyre_stream_t *stream, const halide_buffer_t *send,
                             halide_buffer_t *recv, int dim) {
    return run(comm, stream, "spyre_reduce_scatter_sum", [=] {
        const char *where = "spyre_reduce_scatter_sum";
        LocalCheck check;
        Descriptor mine;
        check.run([&] { mine = describe_pair(Collective::ReduceScatter, recv, send, send, dim, comm->size, where); });
        const std::vector<Descriptor> all = agree(comm, mine, check, where);
        const DType t = (DType)mine.dtype;
        if (t == DType::I8) throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": int8 sums are not supported");
        const int64_t eb = dtype_bytes(t);
        const int64_t bytes = element_count(send) * eb, piece_bytes = bytes / comm->size;
        if (!mine.timing_only) {
            std::vector<uint8_t> local, blocks((size_t)bytes), received((size_t)bytes), result((size_t)piece_bytes);
            read_agreed(comm, send, local, where);
            // Block r (the part rank r keeps) packed contiguously, for MPI_Alltoall.
            const Blocks b(send, dim, comm->size);
            const int64_t run_bytes = b.inner * b.piece * eb;
            for (int r = 0; r < comm->size; r++) {
                for (int64_t o = 0; o < b.outer; o++) {
                    std::memcpy(blocks.data() + r * piece_bytes + o * run_bytes,
                                local.data() + (o * comm->size + r) * run_bytes, (size_t)run_bytes);
                }
            }
            check_mpi(MPI_Alltoall(blocks.data(), (int)piece_bytes, MPI_BYTE, received.data(), (int)piece_bytes,
                                   MPI_BYTE, comm->comm),
                      where);
            sum_in_rank_order(t, received.data(), comm->size, piece_bytes / eb, result.data());
            write_values(recv, result, where);
        } else {
            mark_without_values(recv, where);
        }
        charge(comm, Collective::ReduceScatter, all, (double)bytes, mine.clock_us);
    });
}

int spyre_broadcast(spyre_comm_t *comm, spyre_stream_t *stream, halide_buffer_t *buf, int root) {
    return run(comm, stream, "spyre_broadcast", [=] {
        const char *where = "spyre_broadcast";
        LocalCheck check;
        Descriptor mine;
        check.run([&] {
            if (root < 0 || root >= comm->size) {
                throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": root " + std::to_string(root) +
                                                                 " is not a rank (0.." + std::to_string(comm->size - 1) + ")");
            }
            mine = describe_buffer(Collective::Broadcast, buf, root, where);
        });
        const std::vector<Descriptor> all = agree(comm, mine, check, where);
        const int64_t bytes = element_count(buf) * dtype_bytes((DType)mine.dtype);
        if (!mine.timing_only) {
            std::vector<uint8_t> data((size_t)bytes);
            read_agreed(comm, comm->rank == root ? buf : nullptr, data, where);
            check_mpi(MPI_Bcast(data.data(), (int)bytes, MPI_BYTE, root, comm->comm), where);
            if (comm->rank != root) write_values(buf, data, where);
        } else if (comm->rank != root) {
            mark_without_values(buf, where);
        }
        charge(comm, Collective::Broadcast, all, (double)bytes, mine.clock_us);
    });
}

int spyre_send(spyre_comm_t *comm, spyre_stream_t *stream, const halide_buffer_t *buf, int peer) {
    return run(comm, stream, "spyre_send", [=] {
        const char *where = "spyre_send";
        if (peer < 0 || peer >= comm->size || peer == comm->rank) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": peer " + std::to_string(peer) +
                                                             " is not another rank");
        }
        // The peer is waiting for this descriptor: it is sent even when this rank's own checks fail.
        LocalCheck check;
        Descriptor mine;
        mine.collective = (int32_t)Collective::SendRecv;
        check.run([&] { mine = describe_buffer(Collective::SendRecv, buf, comm->rank, where); });
        mine.local_error = check.code;
        check_mpi(MPI_Send(&mine, (int)sizeof mine, MPI_BYTE, peer, 1, comm->comm), where);
        int accepted = 0;
        check_mpi(MPI_Recv(&accepted, 1, MPI_INT, peer, 2, comm->comm, MPI_STATUS_IGNORE), where);
        if (check.code != 0) throw RuntimeError(check.code, check.message);
        if (!accepted) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": rank " + std::to_string(peer) +
                                                             " expected another tensor than " + describe(mine));
        }
        const int64_t bytes = element_count(buf) * dtype_bytes((DType)mine.dtype);
        if (!mine.timing_only) {
            // A status first, so a read that fails here fails the receiver too instead of leaving it waiting.
            std::vector<uint8_t> data;
            LocalCheck read;
            read.run([&] { read_values(buf, data, where); });
            const int status = read.code;
            check_mpi(MPI_Send(&status, 1, MPI_INT, peer, 4, comm->comm), where);
            if (status != 0) throw RuntimeError(read.code, read.message);
            check_mpi(MPI_Send(data.data(), (int)bytes, MPI_BYTE, peer, 3, comm->comm), where);
        }
        // The sender's link is busy for one hop; it does not wait for the receiver.
        charge(comm, Collective::SendRecv, {mine}, (double)bytes, mine.clock_us);
    });
}

int spyre_recv(spyre_comm_t *comm, spyre_stream_t *stream, halide_buffer_t *buf, int peer) {
    return run(comm, stream, "spyre_recv", [=] {
        const char *where = "spyre_recv";
        if (peer < 0 || peer >= comm->size || peer == comm->rank) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": peer " + std::to_string(peer) +
                                                             " is not another rank");
        }
        LocalCheck check;
        Descriptor mine;
        check.run([&] { mine = describe_buffer(Collective::SendRecv, buf, peer, where); });
        Descriptor theirs;
        check_mpi(MPI_Recv(&theirs, (int)sizeof theirs, MPI_BYTE, peer, 1, comm->comm, MPI_STATUS_IGNORE), where);
        if (check.code != 0 || theirs.local_error != 0) {
            const int refused = 0;
            check_mpi(MPI_Send(&refused, 1, MPI_INT, peer, 2, comm->comm), where);
            if (check.code != 0) throw RuntimeError(check.code, check.message);
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": rank " + std::to_string(peer) +
                                                             " refused its own arguments (its message says why)");
        }
        const bool match = theirs.dtype == mine.dtype && theirs.dims == mine.dims &&
                           std::equal(mine.extent, mine.extent + kMaxDims, theirs.extent) &&
                           theirs.timing_only == mine.timing_only;
        const int accepted = match ? 1 : 0;
        check_mpi(MPI_Send(&accepted, 1, MPI_INT, peer, 2, comm->comm), where);
        if (!match) {
            throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": rank " + std::to_string(peer) +
                                                             " sent " + describe(theirs) + ", this rank expected " +
                                                             describe(mine));
        }
        const int64_t bytes = element_count(buf) * dtype_bytes((DType)mine.dtype);
        if (!mine.timing_only) {
            int status = 0;
            check_mpi(MPI_Recv(&status, 1, MPI_INT, peer, 4, comm->comm, MPI_STATUS_IGNORE), where);
            if (status != 0) {
                throw RuntimeError(spyre_error_bad_argument, std::string(where) + ": rank " + std::to_string(peer) +
                                                                 " could not read the tensor it sends (its message says why)");
            }
            std::vector<uint8_t> data((size_t)bytes);
            check_mpi(MPI_Recv(data.data(), (int)bytes, MPI_BYTE, peer, 3, comm->comm, MPI_STATUS_IGNORE), where);
            write_values(buf, data, where);
        } else {
            mark_without_values(buf, where);
        }
        // The data arrives one hop after the sender sent it (or now, if this rank comes later).
        charge(comm, Collective::SendRecv, {theirs, mine}, (double)bytes, mine.clock_us);
    });
}

int spyre_get_last_collective_stats(spyre_collective_stats *out) {
    if (!out || !g_have_stats) return -1;
    *out = g_last_stats;
    return 0;
}

}  // extern "C"
