// The scratchpad bytes program-tree items read and write, as bounding ranges over
// all iterations of their loops: what stream emission (emission/core_streams.h)
// orders with tokens and what the passes that move items across loop iterations
// or units (double buffering, store spreading, SFU copy forwarding, ring sharing,
// the dry run's written-bytes check) must not reorder. Ranges over-approximate:
// two items whose ranges overlap with a write among them are treated as dependent.
// Expects operands affine in the loop levels (program_tree.h).
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Every scratchpad range one instruction reads or writes, over all iterations of
// the enclosing loops whose trip counts are `trips` (outermost first).
std::vector<ScratchpadAccess> instruction_accesses(const SymInstruction &in, const std::vector<int64_t> &trips);

// Every scratchpad range the node (an instruction or a whole loop) reads or
// writes, over all iterations of its own loops and of the enclosing loops
// whose trip counts are `enclosing_trips` (outermost first); listed unit by unit.
std::vector<ScratchpadAccess> node_accesses(const ProgramNode &n, const std::vector<int64_t> &enclosing_trips);

// True when two access sets overlap with at least one write.
bool accesses_conflict(const std::vector<ScratchpadAccess> &a, const std::vector<ScratchpadAccess> &b);

// The first of nodes[from, ...) whose accesses conflict with `accesses` (under `enclosing_trips`),
// or nodes.size() when none does (the bytes are next touched in a later iteration, or after them).
size_t first_conflicting_node(const std::vector<ProgramNode> &nodes, size_t from,
                              const std::vector<ScratchpadAccess> &accesses, const std::vector<int64_t> &enclosing_trips);

}  // namespace compiler
}  // namespace spyre
