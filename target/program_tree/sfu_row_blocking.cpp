// SFU row blocking (see sfu_row_blocking.h).
#include "program_tree/sfu_row_blocking.h"

#include <algorithm>
#include <map>
#include <string>

#include "program_tree/loop_rewrites.h"
#include "program_tree/sfu_operands.h"

namespace spyre {
namespace compiler {

namespace {

// Bytes one row of the operand covers (a per-row scalar: one element).
int64_t row_len(const SymInstruction &in, const SfuOperands &l, const SfuOperands::Operand &o) {
    return mode_of(in, o) == 1 ? o.elem_bytes : in.f[l.n].base * o.elem_bytes;
}

struct Access {
    int64_t base, coef, len;
    bool write;
};

// Rows of one access and rows of another touch common bytes only in the same iteration.
bool same_row_only(const Access &a, const Access &b, int64_t trip) {
    const int64_t a_lo = std::min(a.base, a.base + a.coef * (trip - 1)), a_hi = std::max(a.base, a.base + a.coef * (trip - 1)) + a.len;
    const int64_t b_lo = std::min(b.base, b.base + b.coef * (trip - 1)), b_hi = std::max(b.base, b.base + b.coef * (trip - 1)) + b.len;
    if (a_hi <= b_lo || b_hi <= a_lo) return true;  // disjoint over the whole loop
    if (a.coef != b.coef || a.coef == 0) return false;
    return std::llabs(a.base - b.base) + std::max(a.len, b.len) <= std::llabs(a.coef);
}

// An instruction whose rows are one contiguous run in every operand (each vector operand's row stride
// is its row length, each per-row scalar's stride is 0) is the same instruction over one row of
// rows x n elements: rewritten so, it can be blocked with its neighbours. A multi-stick vector of
// one tile row (n = 32 lanes, rows = 4 sticks) is the common case. Same work, same cost.
void merge_contiguous_rows(SymInstruction &in) {
    SfuOperands l;
    if (!sfu_operands(in, &l)) return;
    const int64_t rows = in.f[l.rows].base;
    if (rows < 2) return;
    for (const auto &o : l.ops) {
        const int64_t mode = mode_of(in, o);
        if (mode >= 2) continue;
        const int64_t want = mode == 1 ? 0 : in.f[l.n].base * o.elem_bytes;
        if (in.f[o.stride].base != want || in.f[o.stride].depends_on_loops()) return;
    }
    in.f[l.n].base *= rows;
    in.f[l.rows].base = 1;
}

// Blocks the loop if it qualifies; returns the extra scratchpad it placed at `free_at`, or -1.
int64_t block_loop(ProgramNode &loop, int level, int64_t free_at, int64_t limit, int64_t stick) {
    if (loop.trip < 2 || loop.body.size() < 2) return -1;
    for (ProgramNode &n : loop.body) {
        if (n.kind == ProgramNode::Kind::Instruction) merge_contiguous_rows(n.inst);
    }
    std::vector<SfuOperands> layouts(loop.body.size());
    std::vector<Access> accesses;
    std::map<int64_t, int64_t> temp_extent;  // temp base -> bytes per row
    for (size_t i = 0; i < loop.body.size(); i++) {
        const ProgramNode &n = loop.body[i];
        if (n.kind != ProgramNode::Kind::Instruction || !sfu_operands(n.inst, &layouts[i])) return -1;
        const SymInstruction &in = n.inst;
        if (in.f[layouts[i].rows].base != 1) return -1;
        for (const auto &o : layouts[i].ops) {
            const SymOperand &addr = in.f[o.addr];
            const int64_t mode = mode_of(in, o);
            if (mode >= 2) continue;  // immediate or run-time parameter
            for (size_t d = (size_t)level + 1; d < addr.coef.size(); d++) {
                if (addr.coef[d] != 0) return -1;  // no deeper loops in a body of instructions
            }
            const int64_t len = row_len(in, layouts[i], o);
            if (addr.temporary) {
                if (addr.coef_at(level) != 0) return -1;
                temp_extent[addr.base] = std::max(temp_extent[addr.base], len);
                continue;
            }
            if (o.write && addr.coef_at(level) == 0) return -1;  // a row-invariant result
            accesses.push_back({addr.base, addr.coef_at(level), len, o.write});
        }
    }
    for (size_t i = 0; i < accesses.size(); i++) {
        for (size_t j = i; j < accesses.size(); j++) {
            if (!accesses[i].write && !accesses[j].write) continue;
            if (i != j && !same_row_only(accesses[i], accesses[j], loop.trip)) return -1;
        }
    }
    // Temporaries that overlap share one slot group (the same bytes reused by successive temporaries).
    std::vector<std::pair<int64_t, int64_t>> groups;  // [lo, hi)
    for (const auto &kv : temp_extent) {
        if (!groups.empty() && kv.first < groups.back().second) {
            groups.back().second = std::max(groups.back().second, kv.first + kv.second);
        } else {
            groups.push_back({kv.first, kv.first + kv.second});
        }
    }
    if (groups.empty()) return -1;
    // Each temporary must be produced in the body before it is read (else its value comes from outside
    // the loop, and its row slots would be read unwritten).
    auto group_of = [&](int64_t base) {
        size_t g = 0;
        while (!(base >= groups[g].first && base < groups[g].second)) g++;
        return g;
    };
    std::vector<bool> produced(groups.size(), false);
    for (size_t i = 0; i < loop.body.size(); i++) {
        const SymInstruction &in = loop.body[i].inst;
        for (const auto &o : layouts[i].ops) {  // reads first (dst is listed first but written last)
            if (o.write || mode_of(in, o) >= 2 || !in.f[o.addr].temporary) continue;
            if (!produced[group_of(in.f[o.addr].base)]) return -1;
        }
        for (const auto &o : layouts[i].ops) {
            if (o.write && in.f[o.addr].temporary) produced[group_of(in.f[o.addr].base)] = true;
        }
    }
    int64_t row_bytes = 0;  // one row of every group, each group's slot rounded to whole sticks
    std::vector<int64_t> slot(groups.size());
    for (size_t g = 0; g < groups.size(); g++) {
        slot[g] = (groups[g].second - groups[g].first + stick - 1) / stick * stick;
        row_bytes += slot[g];
    }
    // The largest block of rows (dividing the trip count) whose slots fit.
    int64_t block = 0;
    for (int64_t r = loop.trip; r >= 2; r--) {
        if (loop.trip % r == 0 && free_at + r * row_bytes <= limit) {
            block = r;
            break;
        }
    }
    if (block == 0) return -1;
    std::vector<int64_t> group_base(groups.size());
    int64_t at = free_at;
    for (size_t g = 0; g < groups.size(); g++) {
        group_base[g] = at;
        at += block * slot[g];
    }
    for (size_t i = 0; i < loop.body.size(); i++) {
        SymInstruction &in = loop.body[i].inst;
        in.f[layouts[i].rows].base = block;
        for (const auto &o : layouts[i].ops) {
            SymOperand &addr = in.f[o.addr];
            if (mode_of(in, o) >= 2) continue;
            if (addr.temporary) {
                const size_t g = group_of(addr.base);
                addr.base = group_base[g] + (addr.base - groups[g].first);
                in.f[o.stride].base = slot[g];
            } else {
                const int64_t c = addr.coef_at(level);
                in.f[o.stride].base = c;
                addr.set_coef(level, c * block);
            }
        }
    }
    loop.trip /= block;
    return at - free_at;
}

void walk(std::vector<ProgramNode> &nodes, int level, int64_t &peak, int64_t limit, int64_t stick) {
    for (size_t i = 0; i < nodes.size(); i++) {
        if (nodes[i].kind != ProgramNode::Kind::Loop) continue;
        walk(nodes[i].body, level + 1, peak, limit, stick);
        const int64_t added = block_loop(nodes[i], level, peak, limit, stick);
        if (added > 0) peak += added;
        if (nodes[i].trip == 1) {
            // The whole loop in one block: its instructions replace it.
            std::vector<ProgramNode> body = std::move(nodes[i].body);
            for (ProgramNode &c : body) substitute_level(c, (size_t)level, 0);
            nodes.erase(nodes.begin() + (std::ptrdiff_t)i);
            nodes.insert(nodes.begin() + (std::ptrdiff_t)i, body.begin(), body.end());
            i += body.size() - 1;
        }
    }
}

}  // namespace

int64_t block_sfu_rows(std::vector<ProgramNode> &tree, int64_t scratchpad_peak, const MachineDescription &m) {
    int64_t peak = (scratchpad_peak + m.stick_bytes - 1) / m.stick_bytes * m.stick_bytes;
    walk(tree, 0, peak, m.scratchpad_bytes, m.stick_bytes);
    return std::max(peak, scratchpad_peak);
}

}  // namespace compiler
}  // namespace spyre
