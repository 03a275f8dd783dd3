// Dry run: the emitted program is run once on the simulated device, timing
// only (no data), before it is written out, so a schedule whose program would
// break an address rule when run (a DMA outside its tensor or its DRAM
// window, scratchpad bounds, partial sticks, a deadlock) is a compile error
// instead of a failure in the user's app. The static checks of the lowering
// should refuse such schedules first; this is the net under them, and its
// message says which instruction of which core broke which rule.
// Expects: a program validate_program accepted. Guarantees: a program the
// compiler writes runs to the end timing-only on the machine it was built for
// (values-dependent rules, reads of unwritten scratchpad, are checked only by
// functional runs; docs/reliability.md).
#pragma once

#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {
namespace compiler {

// Throws CompileError naming the kernel and the simulator's message.
void dry_run_program(const Program &program, const MachineDescription &m);

}  // namespace compiler
}  // namespace spyre
