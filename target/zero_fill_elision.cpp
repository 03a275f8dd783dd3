// Zero-fill elision (see zero_fill_elision.h).
#include "zero_fill_elision.h"

#include <algorithm>

#include "scratchpad_ranges.h"
#include "sfu_operands.h"
#include "synchronization.h"

namespace spyre {
namespace compiler {

namespace {

namespace Mm = isa::field::Matmul;

// Rows of bytes at a stride; contiguous rows are one row.
struct Rows {
    SymOperand addr;
    int64_t row_bytes = 0, rows = 0, stride = 0;

    Rows canonical() const {
        Rows r = *this;
        if (r.rows == 1 || r.stride == r.row_bytes) {
            r.row_bytes *= r.rows;
            r.rows = 1;
            r.stride = r.row_bytes;
        }
        return r;
    }
    bool operator==(const Rows &o) const {
        const Rows a = canonical(), b = o.canonical();
        return same_address(a.addr, b.addr) && a.row_bytes == b.row_bytes && a.rows == b.rows && a.stride == b.stride;
    }
};

// An `sfu.copy` of the immediate 0 (any float or integer type: all bits zero): its destination rows.
bool zero_fill(const SymInstruction &in, Rows *r) {
    SfuOperands l;
    if (in.op != isa::Opcode::Copy || !sfu_operands(in, &l)) return false;
    const SfuOperands::Operand &src = l.ops[1];
    if (mode_of(in, src) != 2 || in.f[isa::field::Copy::imm].base != 0) return false;
    const SfuOperands::Operand &dst = l.ops[0];
    *r = {in.f[dst.addr], in.f[l.n].base * dst.elem_bytes, in.f[l.rows].base, in.f[dst.stride].base};
    return true;
}

Rows matmul_result(const SymInstruction &in) {
    return {in.f[Mm::c], in.f[Mm::n].base * 4, in.f[Mm::m].base, in.f[Mm::ldc].base};
}

std::vector<ScratchpadAccess> rows_range(const Rows &r, const std::vector<int64_t> &trips) {
    return strided_range(r.addr, r.row_bytes, r.rows, r.stride, trips, false);
}

bool touches(const ProgramNode &n, const std::vector<ScratchpadAccess> &range, const std::vector<int64_t> &trips) {
    return ranges_meet(node_accesses(n, trips), range);
}

// Bytes the fill writes, over all iterations of the enclosing loops.
std::vector<ScratchpadAccess> fill_range(const ProgramNode &fill, const std::vector<int64_t> &trips) {
    std::vector<ScratchpadAccess> r;
    for (const auto &a : node_accesses(fill, trips)) {
        if (a.write) r.push_back(a);
    }
    return r;
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
        Rows filled;
        if (list[f].kind != ProgramNode::Kind::Instruction || !zero_fill(list[f].inst, &filled)) continue;
        if (list[f].inst.f[isa::field::Copy::dst].temporary) continue;
        const std::vector<ScratchpadAccess> range = fill_range(list[f], trips);
        // The first item after the fill that touches its bytes.
        size_t m = f + 1;
        while (m < list.size() && !touches(list[m], range, trips)) m++;
        if (m == list.size() || list[m].kind != ProgramNode::Kind::Instruction) continue;
        SymInstruction &mm = list[m].inst;
        if (mm.op != isa::Opcode::Matmul || mm.f[Mm::accumulate].base == 0 || !(matmul_result(mm) == filled)) continue;
        // A and B must not be the filled bytes.
        const int64_t eb = dtype_bytes((DType)mm.f[Mm::in_type].base);
        const Rows a{mm.f[Mm::a], mm.f[Mm::k].base * eb, mm.f[Mm::m].base, mm.f[Mm::lda].base};
        const Rows b{mm.f[Mm::b], mm.f[Mm::n].base * eb, mm.f[Mm::k].base, mm.f[Mm::ldb].base};
        if (ranges_meet(rows_range(a, trips), range) || ranges_meet(rows_range(b, trips), range)) continue;
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
