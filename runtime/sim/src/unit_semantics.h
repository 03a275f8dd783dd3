// What each instruction does to memory: the functional semantics of the DMA,
// PT and SFU units. Fields arrive already evaluated for the current loop
// indices (one int64 per field of isa.def, in table order). Every function
// checks the hardware rules it is subject to (bounds, whole sticks, poison)
// in both functional and timing-only mode, and touches data only when
// `functional` is set. Violations throw sim::RuleViolation.
#pragma once

#include <cstdint>
#include <vector>

#include "spyre/dram_window.h"
#include "spyre/isa.h"
#include "spyre/machine.h"
#include "spyre/simulator.h"
#include "scratchpad.h"

namespace spyre {
namespace sim {

void execute_dma_load(const int64_t *f, int64_t stick_bytes, Scratchpad &sp, const ArgumentBinding &dram,
                      bool functional);
void execute_dma_store(const int64_t *f, int64_t stick_bytes, Scratchpad &sp, const ArgumentBinding &dram,
                       bool functional);
// Throws RuleViolation when the transfer leaves the core's window of its argument (dram_window.h).
void check_dram_window(isa::Opcode op, const int64_t *f, const DramWindow &window, const char *arg_name);

void execute_ring_put(const int64_t *f, int64_t stick_bytes, Scratchpad &src, Scratchpad &dst, bool functional);
void execute_matmul(const int64_t *f, Scratchpad &sp, bool functional);
void execute_sfu(isa::Opcode op, const int64_t *f, Scratchpad &sp, const std::vector<double> &params, bool functional);

}  // namespace sim
}  // namespace spyre
