// The functional half of a simulation. The timing simulation runs first (it
// never needs data: timing does not depend on values) and records, per core,
// every timed instruction it executed with its evaluated fields and the
// "epoch" it ran in. Epochs end at every cross-core event (ring transfer,
// barrier release); inside an epoch cores share no scratchpad bytes (a ring.put
// writes into another core's scratchpad while that core works on other bytes:
// the scratchpad's shared state is atomic, scratchpad.h) and no DRAM bytes
// they both write (the timing phase refuses that: dram_write_tracker.h). The replay
// therefore runs the cores of an epoch on all host threads at once, each core
// in its recorded order, and epochs one after another: the same results as a
// serial execution in simulated-time order. The simulator replays the record
// a chunk at a time and drops it (simulator.cpp, kReplayChunk): an epoch cut
// between two chunks gives the same results, since its cores are independent.
//
// Poison tracking (reads of scratchpad never written) is not done here: the
// timing phase already did it, in the same order (sim/written_bytes.h). Errors
// carry the core, unit and instruction; when several cores fail, the one that
// happened first in simulated time is reported.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "scratchpad.h"
#include "spyre/isa.h"
#include "spyre/simulator.h"

namespace spyre {
namespace sim {

struct RecordedInstruction {
    uint64_t sequence;  // global order of execution in simulated time
    uint32_t epoch;
    uint8_t unit;
    uint32_t pc;        // index in the unit's stream
    isa::Opcode op;
    int64_t f[isa::kMaxFields];
};

struct ExecutionRecord {
    std::vector<std::vector<RecordedInstruction>> per_core;
    uint32_t epochs = 1;
};

// Replays the record. `scratchpads` has one functional Scratchpad per core.
// Throws SimulationError for the earliest violation.
void replay_functional(const Program &p, const MachineDescription &m, const ExecutionRecord &record,
                       std::vector<std::unique_ptr<Scratchpad>> &scratchpads, const std::vector<ArgumentBinding> &bindings,
                       const std::vector<double> &params, int threads);

}  // namespace sim
}  // namespace spyre
