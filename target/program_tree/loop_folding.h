// Loop folding: a hardware loop whose body is one DMA or SFU instruction is
// folded into that instruction's own dimensions (contiguous bytes, rows,
// planes for DMA; elements or rows for SFU), so one instruction moves or
// computes a whole tile instead of one stick per iteration. A loop of several
// SFU instructions that touch nothing another of them writes (over all its
// iterations) is split into one folded instruction each. Expects a program
// tree from instruction selection; guarantees the same semantics with fewer,
// larger instructions and fewer loops.
#pragma once

#include <vector>

#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

void fold_loops(std::vector<ProgramNode> &tree);

}  // namespace compiler
}  // namespace spyre
