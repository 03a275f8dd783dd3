// Cross-core DRAM write races, found in the timing phase. Between two
// cross-core events of the card (a ring transfer, a barrier release: the
// functional replay's epochs, functional_replay.h) nothing orders one core's
// DMA after another's, so two cores storing into the same DRAM bytes in one
// epoch is a race: which bytes win depends on timing, and the parallel replay
// would give either. The first store that writes bytes another core already
// wrote in the epoch is a rule violation naming both. Checked in functional
// runs and in the compiler's dry run (a map update per row stored: about 30%
// of a timing-only run's wall time, so other timing-only runs skip it;
// SimulationOptions::check_dram_write_races_timing_only).
//
// An epoch boundary anywhere on the card counts as an order here, so a race
// across an unrelated core pair's ring transfer is not seen (no false alarms;
// the replay's results stay deterministic either way). Written bytes are kept
// as runs merged per core and instruction: bounded by the bytes a program
// writes, not by the number of stores.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "hazard_tracker.h"

namespace spyre {
namespace sim {

class DramWriteTracker {
public:
    explicit DramWriteTracker(size_t args) : written_(args) {}

    // `core`'s instruction `pc` stores the DRAM bytes `box` of argument `arg`. Throws
    // RuleViolation if another core wrote any of them in the current epoch.
    void store(int arg, int core, int64_t pc, const ByteBox &box, const char *arg_name);
    // A cross-core event: what was written so far is ordered before what follows.
    void next_epoch();

private:
    struct Run {
        int64_t end;
        int core;
        int64_t pc;
    };
    void store_run(std::map<int64_t, Run> &runs, int64_t begin, int64_t end, int core, int64_t pc, const char *arg_name);
    std::vector<std::map<int64_t, Run>> written_;  // per argument: begin -> run
    bool any_ = false;
};

}  // namespace sim
}  // namespace spyre
