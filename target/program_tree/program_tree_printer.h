// A readable dump of one core's program tree (program_tree.h), the form the
// per-core lowering passes rewrite: SPYRE_DEBUG=2 prints it after each pass
// (spyre_lowering.cpp). Loops show their name and trip count; instructions
// their mnemonic, the Func they implement and every field by its isa.def
// name, affine operands as base + coef*L<level>; marks of the passes (ring
// sharing roles, pipelined loops, prologue loads, temporaries) are shown.
#pragma once

#include <string>
#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

std::string print_program_tree(const std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
