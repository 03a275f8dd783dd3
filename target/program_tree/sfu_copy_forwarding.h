// SFU copy forwarding: an SFU instruction that computes a scratchpad
// temporary which an `sfu.copy` later moves, unchanged, to its destination
// (a let-bound value stored to a buffer, or the values of a Tuple update,
// which Halide computes before storing any of them) writes the destination
// directly; the reads of the temporary in between read the destination and
// the copy disappears. For example the running-state update of attention
// loses four of its copies per KV tile.
//
// Forwards only when the producer, the readers in between and the copy use
// one geometry (rows, elements, stride), the destination is touched by no
// instruction of any unit between the producer and the copy (the producer
// itself may read it in place, element for element), and the temporary is
// not read anywhere else in the enclosing list before being written again:
// so every instruction reads the same values as before, in the same order.
//
// Expects a folded (and row-blocked) program tree, before synchronization;
// guarantees the same results with fewer SFU instructions.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Returns the number of copies removed.
int forward_sfu_copies(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
