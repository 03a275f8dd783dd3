// Scratchpad accesses of program-tree items (see scratchpad_accesses.h).
#include "program_tree/scratchpad_accesses.h"

#include <algorithm>
#include <array>
#include <string>

namespace spyre {
namespace compiler {

namespace {

namespace fld = isa::field;

// Range of an affine operand over the loop box.
void operand_range(const SymOperand &o, const std::vector<int64_t> &trips, int64_t *lo, int64_t *hi) {
    *lo = *hi = o.base;
    for (size_t d = 0; d < o.coef.size() && d < trips.size(); d++) {
        const int64_t span = o.coef[d] * (trips[d] - 1);
        if (span < 0) *lo += span;
        else *hi += span;
    }
}

void add_range(std::vector<ScratchpadAccess> &acc, const SymOperand &addr, const std::vector<int64_t> &trips,
               int64_t extent_lo, int64_t extent_hi, bool write) {
    int64_t lo, hi;
    operand_range(addr, trips, &lo, &hi);
    acc.push_back({lo + extent_lo, hi + extent_hi, write});
}

// Extent [lo, hi) covered by count steps of stride plus `last` bytes.
void strided_extent(int64_t count1, int64_t stride1, int64_t count2, int64_t stride2, int64_t last, int64_t *lo,
                    int64_t *hi) {
    *lo = std::min<int64_t>(0, (count1 - 1) * stride1) + std::min<int64_t>(0, (count2 - 1) * stride2);
    *hi = std::max<int64_t>(0, (count1 - 1) * stride1) + std::max<int64_t>(0, (count2 - 1) * stride2) + last;
}

}  // namespace

std::vector<ScratchpadAccess> instruction_accesses(const SymInstruction &in, const std::vector<int64_t> &trips) {
    std::vector<ScratchpadAccess> acc;
    const auto &f = in.f;
    int64_t lo, hi;
    switch (in.op) {
    case isa::Opcode::Wait:
    case isa::Opcode::Signal:
        for (const ScratchpadAccess &a : in.declared_writes) acc.push_back({a.lo, a.hi, true});
        break;
    case isa::Opcode::RingPut:
        add_range(acc, f[fld::RingPut::src], trips, 0, f[fld::RingPut::bytes].base, false);
        break;
    case isa::Opcode::DmaLoad:
        strided_extent(f[fld::DmaLoad::rows].base, f[fld::DmaLoad::sp_row_stride].base, f[fld::DmaLoad::planes].base,
                       f[fld::DmaLoad::sp_plane_stride].base, f[fld::DmaLoad::row_bytes].base, &lo, &hi);
        add_range(acc, f[fld::DmaLoad::sp], trips, lo, hi, true);
        break;
    case isa::Opcode::DmaStore:
        strided_extent(f[fld::DmaStore::rows].base, f[fld::DmaStore::sp_row_stride].base, f[fld::DmaStore::planes].base,
                       f[fld::DmaStore::sp_plane_stride].base, f[fld::DmaStore::row_bytes].base, &lo, &hi);
        add_range(acc, f[fld::DmaStore::sp], trips, lo, hi, false);
        break;
    case isa::Opcode::Matmul: {
        const int64_t m = f[fld::Matmul::m].base, n = f[fld::Matmul::n].base, k = f[fld::Matmul::k].base;
        const int64_t eb = dtype_bytes((DType)f[fld::Matmul::in_type].base);
        strided_extent(m, f[fld::Matmul::lda].base, 1, 0, k * eb, &lo, &hi);
        add_range(acc, f[fld::Matmul::a], trips, lo, hi, false);
        strided_extent(k, f[fld::Matmul::ldb].base, 1, 0, n * eb, &lo, &hi);
        add_range(acc, f[fld::Matmul::b], trips, lo, hi, false);
        strided_extent(m, f[fld::Matmul::ldc].base, 1, 0, n * 4, &lo, &hi);
        add_range(acc, f[fld::Matmul::c], trips, lo, hi, true);
        break;
    }
    default: {
        // SFU: every operand field named dst/a/b/c with its stride and mode; n and rows.
        const isa::OpcodeSpec &spec = isa::opcode_spec(in.op);
        auto idx = [&](const std::string &name) {
            for (int i = 0; i < spec.num_fields; i++) {
                if (name == spec.fields[i].name) return i;
            }
            return -1;
        };
        const int64_t n = f[idx("n")].base, rows = f[idx("rows")].base;
        const int ti = idx("type");
        const int64_t eb = dtype_bytes((DType)f[ti].base);
        const bool reduce = isa::is_reduction(spec.cost);
        // A row reduction writes one element per row (dst_stride apart); a column reduction n elements.
        const bool by_row = spec.cost == isa::CostClass::SfuRowReduce;
        for (const char *name : {"dst", "a", "b", "c"}) {
            const int fi = idx(name);
            if (fi < 0) continue;
            const std::string s = name;
            const int mi = idx(s + "_mode");
            const int64_t mode = mi < 0 ? 0 : f[mi].base;
            if (mode >= 2) continue;
            int64_t b = eb;
            if (in.op == isa::Opcode::Cast && s == "dst") b = dtype_bytes((DType)f[fld::Cast::dst_type].base);
            const int64_t stride = f[idx(s + "_stride")].base;
            const int64_t len = (mode == 1 || (reduce && s == "dst")) ? b : n * b;
            strided_extent(rows, stride, 1, 0, len, &lo, &hi);
            if (reduce && !by_row && s == "dst") hi = std::max(hi, n * b);
            add_range(acc, f[fi], trips, lo, hi, s == "dst");
            if (s == "dst" && reduce && f[idx("accumulate")].base) add_range(acc, f[fi], trips, lo, hi, false);
        }
        break;
    }
    }
    return acc;
}

bool accesses_conflict(const std::vector<ScratchpadAccess> &a, const std::vector<ScratchpadAccess> &b) {
    for (const auto &x : a) {
        for (const auto &y : b) {
            if ((x.write || y.write) && x.lo < y.hi && y.lo < x.hi) return true;
        }
    }
    return false;
}

namespace {

// Per unit, in program order (the order node_accesses lists them in: unit by unit).
void collect(const ProgramNode &n, std::vector<int64_t> &trips,
             std::array<std::vector<ScratchpadAccess>, isa::kNumUnits> &by_unit) {
    if (n.kind == ProgramNode::Kind::Instruction) {
        std::vector<ScratchpadAccess> &mine = by_unit[(int)n.inst.unit()];
        for (const ScratchpadAccess &a : instruction_accesses(n.inst, trips)) mine.push_back(a);
        return;
    }
    trips.push_back(n.trip);
    for (const ProgramNode &c : n.body) collect(c, trips, by_unit);
    trips.pop_back();
}

}  // namespace

size_t first_conflicting_node(const std::vector<ProgramNode> &nodes, size_t from,
                              const std::vector<ScratchpadAccess> &accesses, const std::vector<int64_t> &enclosing_trips) {
    for (size_t i = from; i < nodes.size(); i++) {
        if (accesses_conflict(accesses, node_accesses(nodes[i], enclosing_trips))) return i;
    }
    return nodes.size();
}

std::vector<ScratchpadAccess> node_accesses(const ProgramNode &n, const std::vector<int64_t> &enclosing_trips) {
    std::array<std::vector<ScratchpadAccess>, isa::kNumUnits> by_unit;
    std::vector<int64_t> trips = enclosing_trips;
    collect(n, trips, by_unit);
    std::vector<ScratchpadAccess> all;
    for (const auto &u : by_unit) all.insert(all.end(), u.begin(), u.end());
    return all;
}

}  // namespace compiler
}  // namespace spyre
