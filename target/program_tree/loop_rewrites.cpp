// Operand rewrites across loop iterations (see loop_rewrites.h).
#include "program_tree/loop_rewrites.h"

#include <algorithm>

#include "program_tree/scratchpad_accesses.h"

namespace spyre {
namespace compiler {

namespace {

// DRAM bytes a DMA instruction touches: argument, [lo, hi) over the loop box, write?
struct DramRange {
    int64_t arg, lo, hi;
    bool write;
};

void dram_ranges(const ProgramNode &n, std::vector<int64_t> &trips, std::vector<DramRange> &out) {
    if (n.kind == ProgramNode::Kind::Loop) {
        trips.push_back(n.trip);
        for (const ProgramNode &c : n.body) dram_ranges(c, trips, out);
        trips.pop_back();
        return;
    }
    const SymInstruction &in = n.inst;
    if (in.op != isa::Opcode::DmaLoad && in.op != isa::Opcode::DmaStore) return;
    const bool load = in.op == isa::Opcode::DmaLoad;
    namespace L = isa::field::DmaLoad;
    namespace S = isa::field::DmaStore;
    const SymOperand &dram = in.f[load ? L::dram : S::dram];
    int64_t lo = dram.base, hi = dram.base;
    for (size_t d = 0; d < dram.coef.size() && d < trips.size(); d++) {
        const int64_t span = dram.coef[d] * (trips[d] - 1);
        (span < 0 ? lo : hi) += span;
    }
    const int64_t rows = in.f[load ? L::rows : S::rows].base, planes = in.f[load ? L::planes : S::planes].base;
    const int64_t rs = in.f[load ? L::dram_row_stride : S::dram_row_stride].base;
    const int64_t ps = in.f[load ? L::dram_plane_stride : S::dram_plane_stride].base;
    lo += std::min<int64_t>(0, (rows - 1) * rs) + std::min<int64_t>(0, (planes - 1) * ps);
    hi += std::max<int64_t>(0, (rows - 1) * rs) + std::max<int64_t>(0, (planes - 1) * ps) + in.f[load ? L::row_bytes : S::row_bytes].base;
    out.push_back({in.f[load ? L::arg : S::arg].base, lo, hi, !load});
}

}  // namespace

void substitute_level(ProgramNode &n, size_t level, int64_t value) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (ProgramNode &c : n.body) substitute_level(c, level, value);
        return;
    }
    for (int f = 0; f < isa::opcode_spec(n.inst.op).num_fields; f++) {
        SymOperand &o = n.inst.f[f];
        o.base += o.coef_at(level) * value;
        if (o.coef.size() > level) o.coef.erase(o.coef.begin() + (std::ptrdiff_t)level);
    }
}

void shift_iteration(ProgramNode &n, size_t level, int64_t iterations) {
    if (n.kind == ProgramNode::Kind::Loop) {
        for (ProgramNode &c : n.body) shift_iteration(c, level, iterations);
        return;
    }
    for (int f = 0; f < isa::opcode_spec(n.inst.op).num_fields; f++) {
        n.inst.f[f].base += n.inst.f[f].coef_at(level) * iterations;
    }
}

// The first iteration of the loop tree[index] as top-level items before the loop.
void peel_first_iteration(std::vector<ProgramNode> &tree, size_t index) {
    ProgramNode &loop = tree[index];
    std::vector<ProgramNode> peeled = loop.body;
    for (ProgramNode &n : peeled) substitute_level(n, 0, 0);
    if (loop.trip == 2) {
        // The second iteration alone: its items replace the loop.
        std::vector<ProgramNode> second = std::move(loop.body);
        for (ProgramNode &n : second) substitute_level(n, 0, 1);
        tree.erase(tree.begin() + (long)index);
        tree.insert(tree.begin() + (long)index, std::make_move_iterator(second.begin()), std::make_move_iterator(second.end()));
    } else if (loop.trip > 2) {
        loop.trip--;
        for (ProgramNode &n : loop.body) shift_iteration(n, 0, 1);
    } else {
        tree.erase(tree.begin() + (long)index);
    }
    tree.insert(tree.begin() + (long)index, std::make_move_iterator(peeled.begin()), std::make_move_iterator(peeled.end()));
}

// True when `a` and `b` touch overlapping DRAM bytes of one tensor and one of them writes.
bool dram_conflict(const ProgramNode &a, const ProgramNode &b, std::vector<int64_t> trips) {
    std::vector<DramRange> ra, rb;
    dram_ranges(a, trips, ra);
    dram_ranges(b, trips, rb);
    for (const DramRange &x : ra) {
        for (const DramRange &y : rb) {
            if (x.arg == y.arg && (x.write || y.write) && x.lo < y.hi && y.lo < x.hi) return true;
        }
    }
    return false;
}

// Moves the DMA load body[index] as early as no earlier item conflicts with it, in
// scratchpad or in DRAM (a DMA store of bytes the load reads stays before it).
size_t hoist_load(std::vector<ProgramNode> &body, size_t index, const std::vector<int64_t> &trips) {
    const std::vector<ScratchpadAccess> mine = node_accesses(body[index], trips);
    size_t to = index;
    while (to > 0) {
        const ProgramNode &prev = body[to - 1];
        // Loads keep their order among themselves (the first tile is needed first).
        if (prev.kind == ProgramNode::Kind::Instruction && prev.inst.op == isa::Opcode::DmaLoad) break;
        if (accesses_conflict(mine, node_accesses(prev, trips)) || dram_conflict(body[index], prev, trips)) break;
        to--;
    }
    if (to < index) {
        ProgramNode moved = std::move(body[index]);
        body.erase(body.begin() + (std::ptrdiff_t)index);
        body.insert(body.begin() + (std::ptrdiff_t)to, std::move(moved));
    }
    return to;
}

// Every DMA load of the second half of `body` (indices >= half), in order.
void hoist_loads(std::vector<ProgramNode> &body, size_t half, const std::vector<int64_t> &trips) {
    for (size_t i = half; i < body.size(); i++) {
        if (body[i].kind == ProgramNode::Kind::Instruction && body[i].inst.op == isa::Opcode::DmaLoad) hoist_load(body, i, trips);
    }
}

namespace {

void rewrite_loops_in(std::vector<ProgramNode> &nodes, int depth, std::vector<int64_t> &trips,
                      const LoopRewrite &rewrite) {
    for (size_t i = 0; i < nodes.size(); i++) {
        if (nodes[i].kind != ProgramNode::Kind::Loop) continue;
        trips.push_back(nodes[i].trip);
        rewrite_loops_in(nodes[i].body, depth + 1, trips, rewrite);
        trips.pop_back();
        const size_t before = nodes.size();
        rewrite(nodes, i, depth, trips);
        i += nodes.size() - before;
    }
}

}  // namespace

void rewrite_loops_innermost_first(std::vector<ProgramNode> &tree, const LoopRewrite &rewrite) {
    std::vector<int64_t> trips;
    rewrite_loops_in(tree, 0, trips, rewrite);
}

}  // namespace compiler
}  // namespace spyre
