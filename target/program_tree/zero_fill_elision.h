// Zero-fill elision: an SFU fill of zeros whose bytes the next access
// overwrites whole with a PT matmul that accumulates into them (the pure
// definition `acc(...) = 0` of a PT accumulator, then its update) becomes
// that matmul without accumulation (C = A.B instead of C += A.B), and the
// fill goes. For example each KV tile of attention saves filling its scores
// and its P.V result.
//
// Applies only when the matmul is in the same list as the fill (not inside a
// loop after it: a K-chunked accumulation keeps its fill), its result C covers
// exactly the filled bytes, it does not read them as A or B, and no
// instruction of any unit between the two touches them.
//
// Expects a folded program tree before synchronization; guarantees the same
// results with fewer SFU instructions.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// Returns the number of fills removed.
int elide_zero_fills(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
