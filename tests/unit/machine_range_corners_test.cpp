// The simulator at the corners of the machine parameters' allowed ranges
// (machine_params.def): a program that uses every unit (DMA, SFU, PT, the
// ring and a barrier) runs to completion with a finite, positive time and the
// same results when any rate, latency or count sits at either end of its
// range, one at a time and all at their slowest or fastest together. Values
// outside the ranges are rejected when loaded (MachineRanges.* in
// machine_test.cpp); these corners are what may reach the simulator.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "program_builder.h"
#include "declared_machine_ranges.h"
#include "spyre/simulator.h"

namespace spyre::testing {
namespace {


// `name=value` if it keeps the program legal on the machine (same structural
// fingerprint, the rules between parameters hold) and the DRAM size the test
// allocates: an override that changes only how long the program takes.
bool changes_only_timing(const MachineDescription &m, const std::string &item) {
    MachineDescription changed = m;
    try {
        apply_machine_overrides(changed, item, "probe");
    } catch (const Error &) {
        return false;
    }
    return changed.structural_fingerprint() == m.structural_fingerprint() && changed.dram_bytes == m.dram_bytes &&
           changed.dram_usable_bytes == m.dram_usable_bytes;
}

// Core 0: Out = A + B on the SFU, A sent over the ring to core 5 which stores
// it as Copy after a barrier with core 0. Core 1: C = A2 x B2 on the PT.
ProgramBuilder every_unit_program() {
    ProgramBuilder b("corners");
    const int A = b.arg("A", ArgKind::Input, DType::F32, {64, 2});
    const int B = b.arg("B", ArgKind::Input, DType::F32, {64, 2});
    const int Out = b.arg("Out", ArgKind::Output, DType::F32, {64, 2});
    const int Copy = b.arg("Copy", ArgKind::Output, DType::F32, {64, 2});
    const int64_t row = 256, block = 2 * row;
    b.load(0, A, 0, 0, row, 2);
    b.load(0, B, 0, block, row, 2);
    b.signal(0, Unit::Dma, 0);
    b.wait(0, Unit::Sfu, 0);
    b.emit(0, Unit::Sfu, Opcode::Add, {2 * block, row, 0, row, 0, block, row, 0, 64, 2, (int)DType::F32, 0});
    b.signal(0, Unit::Sfu, 1);
    b.wait(0, Unit::Dma, 1);
    b.store(0, Out, 0, 2 * block, row, 2);
    b.emit(0, Unit::Dma, Opcode::RingPut, {5, 0, 8192, block, 2});
    b.emit(0, Unit::Dma, Opcode::Barrier, {3, 2});
    b.wait(5, Unit::Dma, 2);
    b.emit(5, Unit::Dma, Opcode::Barrier, {3, 2});
    b.store(5, Copy, 0, 8192, row, 2);

    const int M = 8, K = 40;
    const int A2 = b.arg("A2", ArgKind::Input, DType::F16, {K, M});
    const int B2 = b.arg("B2", ArgKind::Input, DType::F16, {48, K});
    const int C = b.arg("C", ArgKind::Output, DType::F32, {48, M});
    b.load(1, A2, 0, 0, 128, M);
    b.load(1, B2, 0, 4096, 128, K);
    b.signal(1, Unit::Dma, 0);
    b.wait(1, Unit::Pt, 0);
    b.emit(1, Unit::Pt, Opcode::Matmul, {32768, 256, 0, 128, 4096, 128, M, 64, K, (int)DType::F16, 0});
    b.signal(1, Unit::Pt, 1);
    b.wait(1, Unit::Dma, 1);
    b.store(1, C, 0, 32768, 256, M);
    return b;
}

struct Corner {
    std::string overrides;
};

std::vector<Corner> corners() {
    const MachineDescription m = builtin_machine();
    std::vector<Corner> out;
    for (const DeclaredRange &r : declared_ranges()) {
        for (double end : {r.min, r.max}) {
            char text[64];
            std::snprintf(text, sizeof text, "%.17g", end);
            const std::string item = r.name + "=" + text;
            if (changes_only_timing(m, item)) out.push_back({item});
        }
    }
    // Everything slow together, then everything fast: the extremes of the
    // cycle counts the timing model must still add up.
    out.push_back({"clock_ghz=10,dram_bandwidth_gbps=1,dram_turnaround_ns_per_byte=1,dma_latency_cycles=1e6,"
                   "ring_hop_latency_ns=1e5,ring_bytes_per_cycle=1,sfu_bytes_per_cycle_per_corelet=1,"
                   "sfu_instruction_overhead_cycles=1e6,sfu_transcendental_cost=1000,pt_peak_macs_per_cycle_fp16=1,"
                   "pt_fp32_rate_factor=0.015625,pt_pass_fill_cycles=1e6,kernel_launch_cycles=1e8,corelets_per_core=1,"
                   "dram_one_core_fraction=0.01,host_link_gbps=0.1,restickify_gbps=0.1,pt_sustained_macs_per_ns=1,"
                   "sfu_row_reduce_cost=1000,sfu_row_reduce_row_cycles=1e6"});
    out.push_back({"clock_ghz=0.1,dram_bandwidth_gbps=1e5,dram_turnaround_ns_per_byte=0,dma_latency_cycles=0,"
                   "ring_hop_latency_ns=0,ring_bytes_per_cycle=1e6,sfu_bytes_per_cycle_per_corelet=1e6,"
                   "sfu_instruction_overhead_cycles=0,pt_peak_macs_per_cycle_fp16=1e6,pt_pass_fill_cycles=0,"
                   "kernel_launch_cycles=0,corelets_per_core=8,dram_one_core_fraction=1,dram_bound_turnaround_ns_per_byte=0,"
                   "sfu_row_reduce_cost=1,sfu_row_reduce_row_cycles=0"});
    return out;
}

// Stops the test binary if it is still alive after `deadline` (a hung
// simulator cannot be interrupted).
class Deadline {
public:
    Deadline(std::chrono::seconds deadline, std::string what)
        : watchdog_([this, deadline, what = std::move(what)] {
              std::unique_lock<std::mutex> lock(mutex_);
              if (!done_changed_.wait_for(lock, deadline, [this] { return done_; })) {
                  std::printf("FAILED: %s did not finish within %lld s (it hangs)\n", what.c_str(), (long long)deadline.count());
                  std::fflush(stdout);
                  std::_Exit(1);
              }
          }) {}
    ~Deadline() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        done_changed_.notify_all();
        watchdog_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable done_changed_;
    bool done_ = false;
    std::thread watchdog_;
};

TEST(MachineRangeCorners, AProgramUsingEveryUnitRunsToCompletionAtEveryCorner) {
    Deadline deadline(std::chrono::seconds(120), "the runs at the corners of the machine ranges");
    const std::vector<HostTensor> inputs = {
        random_tensor("A", DType::F32, {64, 2}, 1), random_tensor("B", DType::F32, {64, 2}, 2),
        random_tensor("A2", DType::F16, {40, 8}, 3), random_tensor("B2", DType::F16, {48, 40}, 4)};
    const HostRunResult reference = run(every_unit_program(), inputs);
    const std::vector<Corner> all = corners();
    EXPECT_GT(all.size(), 40u) << "both ends of most parameters change only the timing";
    for (const Corner &c : all) {
        SCOPED_TRACE(c.overrides);
        ProgramBuilder b = every_unit_program();
        apply_machine_overrides(b.m, c.overrides, "corner");
        HostRunResult r;
        try {
            r = run(b, inputs);
        } catch (const Error &e) {
            ADD_FAILURE() << e.what();
            continue;
        }
        EXPECT_TRUE(std::isfinite(r.sim.cycles) && r.sim.cycles > 0) << r.sim.cycles;
        EXPECT_TRUE(std::isfinite(r.sim.simulated_us) && r.sim.simulated_us > 0) << r.sim.simulated_us;
        ASSERT_EQ(r.outputs.size(), reference.outputs.size());
        for (size_t i = 0; i < r.outputs.size(); i++) EXPECT_EQ(r.outputs[i].data, reference.outputs[i].data) << "output " << i;
    }
}

}  // namespace
}  // namespace spyre::testing
