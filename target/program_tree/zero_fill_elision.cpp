// Zero-fill elision (see zero_fill_elision.h).
#include "program_tree/zero_fill_elision.h"

#include <algorithm>

#include "program_tree/scratchpad_ranges.h"
#include "program_tree/sfu_operands.h"

namespace spyre {
namespace compiler {

namespace {

namespace Mm = isa::field::Matmul;

// An `sfu.copy` of the immediate 0 (any float or integer type: all bits zero): its destination rows.
bool zero_fill(const SymInstruction &in, StridedRows *r) {
    SfuOperands l;
    if (in.op != isa::Opcode::Copy || !sfu_operands(in, &l)) return false;
    const SfuOperands::Operand &src = l.ops[1];
    if (mode_of(in, src) != 2 || in.f[isa::field::Copy::imm].base != 0) return false;
    const SfuOperands::Operand &dst = l.ops[0];
    *r = {in.f[dst.addr], in.f[l.n].base * dst.elem_bytes, in.f[l.rows].base, in.f[dst.stride].base};
    return true;
}

StridedRows matmul_result(const SymInstruction &in) {
    return {in.f[Mm::c], in.f[Mm::n].base * 4, in.f[Mm::m].base, in.f[Mm::ldc].base};
}

int elide_in(std::vector<ProgramNode> &list, std::vector<int64_t> &trips) {
    int removed = 0;
    for (ProgramNode &n : list) {
        if (n.kind != ProgramNode::Kind::Loop) continue;
        trips.push_back(n.trip);
        removed += elide_in(n.body, trips);
        trips.pop_back();
    }
    for (size_t f = 0; f < list.size(); f++) {
        StridedRows filled;
        if (list[f].kind != ProgramNode::Kind::Instruction || !zero_fill(list[f].inst, &filled)) continue;
        if (list[f].inst.f[isa::field::Copy::dst].temporary) continue;
        const std::vector<ScratchpadAccess> range = filled.range(trips, true);
        // The first item after the fill that touches its bytes.
        size_t m = f + 1;
        while (m < list.size() && !touches(list[m], range, trips)) m++;
        if (m == list.size() || list[m].kind != ProgramNode::Kind::Instruction) continue;
        SymInstruction &mm = list[m].inst;
        if (mm.op != isa::Opcode::Matmul || mm.f[Mm::accumulate].base == 0 || !same_bytes(matmul_result(mm), filled)) continue;
        // A and B must not be the filled bytes.
        const int64_t eb = dtype_bytes((DType)mm.f[Mm::in_type].base);
        const StridedRows a{mm.f[Mm::a], mm.f[Mm::k].base * eb, mm.f[Mm::m].base, mm.f[Mm::lda].base};
        const StridedRows b{mm.f[Mm::b], mm.f[Mm::n].base * eb, mm.f[Mm::k].base, mm.f[Mm::ldb].base};
        if (ranges_meet(a.range(trips), range) || ranges_meet(b.range(trips), range)) continue;
        mm.f[Mm::accumulate].base = 0;
        list.erase(list.begin() + (std::ptrdiff_t)f);
        removed++;
        f--;  // the next item moved to f (wraps to the maximum and back to 0 after the increment)
    }
    return removed;
}

}  // namespace

int elide_zero_fills(std::vector<ProgramNode> &tree) {
    std::vector<int64_t> trips;
    return elide_in(tree, trips);
}

}  // namespace compiler
}  // namespace spyre
