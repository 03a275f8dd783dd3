// The collectives among simulated cards at message sizes from 8 B to 256 MiB,
// in the convention of nccl-tests: for each size, the simulated time of one
// collective, the algorithm bandwidth (bytes / time) and the bus bandwidth
// (algorithm bandwidth x the collective's factor: 2(P-1)/P for all_reduce,
// (P-1)/P for all_gather and reduce_scatter, 1 for broadcast), and the
// algorithm the link model chose. Run under mpirun, one card per rank:
//
//   mpirun -np 4 build/bin/spyre_collectives_bench [--min-bytes 8] [--max-bytes 268435456]
//          [--op all_reduce|all_gather|reduce_scatter|broadcast|all] [--csv]
//
// Timing-only (no values move: the figures are the link model's, which do not
// depend on them); every rank takes part in each collective. Rank 0 prints.
// "size" is nccl-tests' size: the bytes of one rank's buffer for all_reduce
// and broadcast, of the gathered result for all_gather and of the scattered
// input for reduce_scatter. benchmarks/collectives/collectives_report.py runs
// it for 2, 4 and 8 ranks and writes the table of docs/performance.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "HalideBuffer.h"
#include "spyre/card_link.h"
#include "spyre/machine.h"
#include "spyre/spyre_collectives.h"
#include "spyre/spyre_device.h"
#include "spyre/spyre_runtime.h"

namespace {

using Halide::Runtime::Buffer;

// One collective at `size` bytes (fp16 elements); returns 0 or the error code.
int run_one(spyre_comm_t *comm, const std::string &op, int64_t size, spyre_collective_stats *stats) {
    const int ranks = spyre_comm_size(comm);
    const int elements = (int)std::max<int64_t>(1, size / 2);
    const halide_type_t f16(halide_type_float, 16);
    auto device = [](Buffer<void> &b) { return b.device_malloc(spyre_device_interface()); };
    int r = 0;
    if (op == "all_reduce" || op == "broadcast") {
        Buffer<void> buf(f16, nullptr, std::vector<int>{elements});
        if ((r = device(buf))) return r;
        r = op == "all_reduce" ? spyre_all_reduce_sum(comm, nullptr, buf) : spyre_broadcast(comm, nullptr, buf, 0);
    } else {
        const int piece = std::max(1, elements / ranks);
        Buffer<void> small(f16, nullptr, std::vector<int>{piece}), big(f16, nullptr, std::vector<int>{piece * ranks});
        if ((r = device(small)) || (r = device(big))) return r;
        r = op == "all_gather" ? spyre_all_gather(comm, nullptr, small, big, 0)
                               : spyre_reduce_scatter_sum(comm, nullptr, big, small, 0);
    }
    if (r == 0) spyre_get_last_collective_stats(stats);
    return r;
}

}  // namespace

int main(int argc, char **argv) {
    spyre_comm_t *comm = spyre_comm_world(&argc, &argv);
    if (!comm) {
        std::fprintf(stderr, "spyre_collectives_bench: %s\n", spyre_last_error());
        return 2;
    }
    CLI::App app{"Collectives among simulated Spyre cards (one per MPI rank), nccl-tests style"};
    int64_t min_bytes = 8, max_bytes = int64_t{256} << 20;
    std::string op = "all";
    bool csv = false;
    app.add_option("--min-bytes", min_bytes, "smallest message")->check(CLI::Range(int64_t{2}, int64_t{1} << 40));
    app.add_option("--max-bytes", max_bytes, "largest message")->check(CLI::Range(int64_t{2}, int64_t{1} << 40));
    app.add_option("--op", op, "collective")
        ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all"}));
    app.add_flag("--csv", csv, "one CSV row per measurement instead of tables");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        const int code = spyre_comm_rank(comm) == 0 ? app.exit(e) : 1;
        spyre_comm_finalize(comm);
        return code;
    }
    const int rank = spyre_comm_rank(comm), ranks = spyre_comm_size(comm);
    const spyre::MachineDescription &m = spyre::default_machine();
    spyre_set_timing_only(1);
    std::vector<std::string> ops = op == "all" ? std::vector<std::string>{"all_reduce", "all_gather", "reduce_scatter",
                                                                          "broadcast"}
                                               : std::vector<std::string>{op};
    if (rank == 0 && csv) std::printf("collective,ranks,bytes,time_us,algbw_gbps,busbw_gbps,algorithm,latency_us,peer_to_peer\n");
    int status = 0;
    for (const std::string &name : ops) {
        if (rank == 0 && !csv) {
            std::printf("# %s, %d ranks, float16, card_link_latency_us %g, host_link_gbps %g, %s\n", name.c_str(), ranks,
                        m.card_link_latency_us, m.host_link_gbps, m.card_link_peer_to_peer ? "peer-to-peer" : "host-staged");
            std::printf("#%13s %12s %12s %12s  %s\n", "size (B)", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm");
        }
        const spyre::Collective kind = name == "all_reduce"   ? spyre::Collective::AllReduce
                                       : name == "all_gather" ? spyre::Collective::AllGather
                                       : name == "reduce_scatter" ? spyre::Collective::ReduceScatter
                                                                  : spyre::Collective::Broadcast;
        for (int64_t size = min_bytes; size <= max_bytes; size *= 2) {
            spyre_collective_stats s{};
            if (int r = run_one(comm, name, size, &s)) {
                std::fprintf(stderr, "rank %d: %s at %lld bytes: %s\n", rank, name.c_str(), (long long)size,
                             spyre_last_error());
                status = 1;
                break;
            }
            const double algbw = s.link_us > 0 ? (double)size / (s.link_us * 1e3) : 0;
            const double busbw = algbw * spyre::bus_bandwidth_factor(kind, ranks);
            if (rank != 0) continue;
            if (csv) {
                std::printf("%s,%d,%lld,%.4f,%.4f,%.4f,%s,%g,%lld\n", name.c_str(), ranks, (long long)size, s.link_us, algbw,
                            busbw, s.algorithm, m.card_link_latency_us, (long long)m.card_link_peer_to_peer);
            } else {
                std::printf("%14lld %12.2f %12.3f %12.3f  %s\n", (long long)size, s.link_us, algbw, busbw, s.algorithm);
            }
        }
    }
    spyre_comm_finalize(comm);
    return status;
}
