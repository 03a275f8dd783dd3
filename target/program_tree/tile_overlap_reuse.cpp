// Reuse of the overlap between consecutive staged tiles (see tile_overlap_reuse.h).
#include "program_tree/tile_overlap_reuse.h"

#include <algorithm>

namespace spyre {
namespace compiler {

namespace {

namespace L = isa::field::DmaLoad;
namespace C = isa::field::Copy;

bool same_coefficients(const SymOperand &a, const SymOperand &b) {
    const size_t n = std::max(a.coef.size(), b.coef.size());
    for (size_t d = 0; d < n; d++) {
        if (a.coef_at(d) != b.coef_at(d)) return false;
    }
    return true;
}

SymOperand constant(int64_t v) {
    SymOperand o;
    o.base = v;
    return o;
}

// Rows of whole valid bytes in a single plane, the same in every iteration, no ring role.
bool is_plain_rows(const SymInstruction &in) {
    if (in.op != isa::Opcode::DmaLoad) return false;
    for (int f : {(int)L::row_bytes, (int)L::valid_bytes, (int)L::rows, (int)L::valid_rows, (int)L::planes,
                  (int)L::valid_planes, (int)L::dram_row_stride, (int)L::sp_row_stride}) {
        if (in.f[f].depends_on_loops()) return false;
    }
    return in.f[L::planes].base == 1 && in.f[L::valid_planes].base == 1 &&
           in.f[L::valid_rows].base == in.f[L::rows].base && in.f[L::valid_bytes].base == in.f[L::row_bytes].base &&
           in.ring.role == RingShare::Role::None;
}

// The SFU copy (4-byte words, bit-exact) of `rows` rows of `row_bytes` bytes from `from` to
// `to`, both `stride` bytes apart, as rows of at most max_lanes words; false if that cannot be.
bool overlap_copy(const SymInstruction &load, const SymOperand &to, const SymOperand &from, int64_t rows,
                  int64_t row_bytes, int64_t stride, int64_t max_lanes, ProgramNode *copy) {
    if (row_bytes % 4 != 0) return false;
    if (stride == row_bytes) {  // one run: cut it into rows of the largest word count that divides it
        row_bytes *= rows;
        rows = 1;
    }
    const int64_t words = row_bytes / 4;
    int64_t n = std::min<int64_t>(words, std::max<int64_t>(1, max_lanes));
    while (words % n != 0) n--;
    if (rows > 1 && n != words) return false;  // strided rows longer than one SFU row
    SymInstruction c;
    c.op = isa::Opcode::Copy;
    c.f[C::dst] = to;
    c.f[C::dst_stride] = constant(rows > 1 ? stride : n * 4);
    c.f[C::a] = from;
    c.f[C::a_stride] = constant(rows > 1 ? stride : n * 4);
    c.f[C::a_mode] = constant(0);
    c.f[C::n] = constant(n);
    c.f[C::rows] = constant(rows > 1 ? rows : words / n);
    c.f[C::type] = constant((int64_t)DType::I32);
    c.f[C::imm] = constant(0);
    c.func = load.func;
    c.copies_staged_overlap = true;
    *copy = ProgramNode::instruction(c);
    return true;
}

}  // namespace

bool reuse_tile_overlap(ProgramNode &load, const ProgramNode &previous, int64_t stick_bytes, int64_t max_lanes,
                        ProgramNode *copy) {
    if (load.kind != ProgramNode::Kind::Instruction || previous.kind != ProgramNode::Kind::Instruction) return false;
    SymInstruction &in = load.inst;
    const SymInstruction &prev = previous.inst;
    if (!is_plain_rows(in) || !is_plain_rows(prev)) return false;
    for (int f : {(int)L::arg, (int)L::row_bytes, (int)L::rows, (int)L::dram_row_stride, (int)L::sp_row_stride}) {
        if (in.f[f].base != prev.f[f].base) return false;
    }
    if (!same_coefficients(in.f[L::dram], prev.f[L::dram]) || !same_coefficients(in.f[L::sp], prev.f[L::sp])) {
        return false;
    }
    const int64_t bytes = in.f[L::row_bytes].base, rows = in.f[L::rows].base;
    const int64_t step = in.f[L::dram].base - prev.f[L::dram].base;  // how far the tile moved
    if (rows == 1) {
        // One run: the previous run's last bytes are this one's first.
        if (step <= 0 || step >= bytes || step % stick_bytes != 0) return false;
        const int64_t overlap = bytes - step;
        SymOperand from = prev.f[L::sp];
        from.base += step;
        if (!overlap_copy(in, in.f[L::sp], from, 1, overlap, overlap, max_lanes, copy)) return false;
        in.f[L::sp].base += overlap;
        in.f[L::dram].base += overlap;
        in.f[L::row_bytes].base = step;
        in.f[L::valid_bytes].base = step;  // one row: its strides (>= the old row) stay as they were
        return true;
    }
    // Rows: the tile moved by k whole rows, so the previous tile's last rows - k rows are this one's first.
    const int64_t dram_stride = in.f[L::dram_row_stride].base, sp_stride = in.f[L::sp_row_stride].base;
    if (dram_stride < bytes || sp_stride < bytes || step <= 0 || step % dram_stride != 0) return false;
    const int64_t k = step / dram_stride, kept = rows - k;
    if (kept <= 0) return false;
    SymOperand from = prev.f[L::sp];
    from.base += k * sp_stride;
    if (!overlap_copy(in, in.f[L::sp], from, kept, bytes, sp_stride, max_lanes, copy)) return false;
    in.f[L::sp].base += kept * sp_stride;
    in.f[L::dram].base += kept * dram_stride;
    in.f[L::rows].base = k;
    in.f[L::valid_rows].base = k;
    return true;
}

}  // namespace compiler
}  // namespace spyre
