// The simulated Spyre device executing one program: functional (exact
// results, rule enforcement) and timing (event-driven, cycle-approximate) at
// once, or timing only. Every unit of every core runs its stream in order;
// order between units comes only from tokens, ring arrivals and barriers.
//
// Rule violations stop the run with a SimulationError naming the core, unit,
// instruction and what was violated: compute touching memory outside its own
// scratchpad, scratchpad out of bounds, DMA not in whole sticks, reads of
// scratchpad bytes never written, DRAM access outside an allocation, two
// cores storing into the same DRAM bytes with no ring transfer or barrier
// between them (sim/dram_write_tracker.h), and deadlock (every unfinished unit
// waiting). A run that exceeds its budget of
// dynamic instructions or simulated cycles (when one is set) stops with a
// BudgetExceeded naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyre/error.h"
#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {

enum class SyncMode {
    Normal,         // units overlap as the program allows
    ForcedSerial,   // one instruction at a time across the whole card
    RandomLatency,  // every duration scaled by a seeded random factor in [1, 4)
};

struct SimulationOptions {
    bool functional = true;          // false: timing only, data never touched
    SyncMode sync = SyncMode::Normal;
    uint64_t seed = 1;               // for RandomLatency
    bool check_uninitialized = true; // poison tracking of scratchpad reads (timing phase: both modes)
    // Cross-core DRAM write races (sim/dram_write_tracker.h) are checked in functional runs; in
    // timing-only runs only when this is set (it costs ~30% of a timing-only run's wall time).
    // The compiler's dry run sets it, so no written program has a race.
    bool check_dram_write_races_timing_only = false;
    bool record_trace = false;       // keep one event per executed instruction
    uint64_t max_trace_events = 0;   // with record_trace: keep at most this many (the first ones; 0: all)
    // Budgets (0: none). A run that executes more dynamic instructions (control included), or whose
    // simulated time passes max_cycles, stops with BudgetExceeded as soon as it does.
    uint64_t max_instructions = 0;
    double max_cycles = 0;
};

// A rule violation or deadlock found while running a program.
class SimulationError : public Error {
public:
    SimulationError(const std::string &what, int core, int unit, int64_t index, uint64_t offset)
        : Error(what), core(core), unit(unit), instruction_index(index), file_offset(offset) {}
    int core;                 // -1 for deadlock reports spanning cores
    int unit;                 // isa::Unit value, -1 if not tied to one unit
    int64_t instruction_index;
    uint64_t file_offset;
    // A read of scratchpad bytes never written: the first such byte and where the operand's run
    // starts (the compiler names the buffer from it); -1 for other violations.
    int64_t unwritten_byte = -1;
    int64_t unwritten_operand_start = -1;
};

// A run stopped because it went past SimulationOptions::max_instructions or max_cycles.
class BudgetExceeded : public SimulationError {
public:
    enum class Budget { Instructions, Cycles };
    BudgetExceeded(const std::string &what, Budget budget, int core, int unit, int64_t index, uint64_t offset)
        : SimulationError(what, core, unit, index, offset), budget(budget) {}
    Budget budget;
};

struct UnitStats {
    double busy_cycles = 0;
    uint64_t instructions = 0;  // dynamic count, control included
};

struct CoreStats {
    UnitStats unit[isa::kNumUnits];
};

struct TraceEvent {
    int core;
    int unit;
    isa::Opcode op;
    double start_cycle;
    double end_cycle;
};

struct SimulationResult {
    std::string kernel;
    double cycles = 0;
    double simulated_us = 0;
    uint64_t macs = 0;
    // Cycles one PT needs for all of `macs` at the datasheet peak of each matmul's input type
    // (fp32 and int8 at their rate factors): the compute side of the roofline bound.
    double pt_peak_cycles = 0;
    uint64_t dram_read_bytes = 0;
    uint64_t dram_write_bytes = 0;
    // The elements of the program's input and of its output arguments, in bytes, each once (no
    // padding): what an algorithm that reads every input and writes every output once moves.
    uint64_t argument_input_bytes = 0;
    uint64_t argument_output_bytes = 0;
    uint64_t ring_bytes = 0;
    uint64_t dynamic_instructions = 0;
    std::vector<CoreStats> cores;
    std::vector<TraceEvent> trace;
    uint64_t trace_events_dropped = 0;  // past SimulationOptions::max_trace_events
};

// One device buffer per program argument (inputs, outputs and temporaries),
// each at least as large as the argument's device layout. In timing-only mode
// the pointers may be null. Scalar parameters in program order.
struct ArgumentBinding {
    uint8_t *data = nullptr;
    int64_t bytes = 0;
};

// Runs the (validated) program. Throws SimulationError on a rule violation or deadlock.
SimulationResult simulate_program(const Program &p, const MachineDescription &m,
                                  const std::vector<ArgumentBinding> &args, const std::vector<double> &params,
                                  const SimulationOptions &options = {});

}  // namespace spyre
