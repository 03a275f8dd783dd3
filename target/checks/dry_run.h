// Dry run: the emitted program is run once on the simulated device, timing
// only (no data), before it is written out, so a schedule whose program would
// break a rule when run (a DMA outside its tensor or its DRAM window,
// scratchpad bounds, partial sticks, a read of scratchpad bytes no
// instruction wrote, two cores storing into the same DRAM bytes unordered, a
// deadlock) is a compile error instead of a failure in
// the user's app. The static checks of the lowering should refuse such
// schedules first; this is the net under them, and its message says which
// instruction of which core broke which rule, and for a read of unwritten
// bytes which scratchpad buffer the operand points into and which Func's
// instruction, in which loops of the schedule, reads it.
//
// Why one run proves it for every input: a program's control flow and
// addresses do not depend on data (loop trip counts and affine addresses are
// constants of the program; scalar parameters feed only SFU values), so the
// instructions, their operands and their order in simulated time are the same
// on every run in the normal synchronization mode, the dry run's (the
// machine's parameters are fixed by the program's fingerprint). The test modes
// (SyncMode::ForcedSerial, RandomLatency) change the order of events, so a
// program that lacks a wait can break a hazard rule only there; the
// synchronization pass and the tests run in those modes cover that.
// Expects: a program validate_program accepted. Guarantees: a program the
// compiler writes runs to the end, timing-only or functional, on the machine it
// was built for, without a rule violation (the simulator's only value-level
// outcomes are the values themselves: non-finite results follow IEEE-754,
// docs/reliability.md).
#pragma once

#include <vector>

#include "program_tree/program_tree.h"
#include "selection/scratchpad_plan.h"
#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {
namespace compiler {

// Throws CompileError naming the kernel and the simulator's message. `placements` (per core,
// optional) name the scratchpad buffer an operand that reads unwritten bytes points into,
// and `trees` (per core, optional: the trees the program was emitted from) the Func whose
// instruction reads it and the Halide loops around that instruction.
void dry_run_program(const Program &program, const MachineDescription &m,
                     const std::vector<std::vector<ScratchpadPlacement>> &placements = {},
                     const std::vector<const std::vector<ProgramNode> *> &trees = {});

}  // namespace compiler
}  // namespace spyre
