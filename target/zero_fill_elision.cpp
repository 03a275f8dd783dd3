// Zero-fill elision (see zero_fill_elision.h).
#include "zero_fill_elision.h"

#include <algorithm>

#include "sfu_operands.h"
#include "synchronization.h"

namespace spyre {
namespace compiler {

namespace {

namespace Mm = isa::field::Matmul;

bool same_address(const SymOperand &a, const SymOperand &b) {
    if (a.base != b.base) return false;
    const size_t levels = std::max(a.coef.size(), b.coef.size());
    for (size_t d = 0; d < levels; d++) {
        if (a.coef_at(d) != b.coef_at(d)) return false;
    }
    return true;
}

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

// The bytes of `r` over all iterations of the enclosing loops.
std::vector<ScratchpadAccess> rows_range(const Rows &r, const std::vector<int64_t> &trips) {
    int64_t lo = r.addr.base, hi = r.addr.base;
    for (size_t d = 0; d < trips.size(); d++) {
        const int64_t span = r.addr.coef_at(d) * (trips[d] - 1);
        if (span < 0) lo += span;
        else hi += span;
    }
    const int64_t rows_span = (r.rows - 1) * r.stride;
    lo += std::min<int64_t>(0, rows_span);
    hi += std::max<int64_t>(0, rows_span) + r.row_bytes;
    return {{lo, hi, false}};
}

bool overlaps(const std::vector<ScratchpadAccess> &x, const std::vector<ScratchpadAccess> &y) {
    for (const auto &a : x) {
        for (const auto &b : y) {
            if (a.lo < b.hi && b.lo < a.hi) return true;
        }
    }
    return false;
}

bool touches(const ProgramNode &n, const std::vector<ScratchpadAccess> &range, const std::vector<int64_t> &trips) {
    for (const auto &a : node_accesses(n, trips)) {
        for (const auto &b : range) {
            if (a.lo < b.hi && b.lo < a.hi) return true;
        }
    }
    return false;
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
        if (overlaps(rows_range(a, trips), range) || overlaps(rows_range(b, trips), range)) continue;
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
