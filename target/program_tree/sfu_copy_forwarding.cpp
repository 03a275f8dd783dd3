// SFU copy forwarding (see sfu_copy_forwarding.h).
#include "program_tree/sfu_copy_forwarding.h"

#include <algorithm>

#include "program_tree/scratchpad_ranges.h"
#include "program_tree/sfu_operands.h"

namespace spyre {
namespace compiler {

namespace {

// Rows x elements at a row stride from an address: what one SFU operand covers.
struct Geometry {
    SymOperand addr;
    int64_t stride = 0, n = 0, rows = 0, elem_bytes = 0;

    StridedRows bytes() const { return {addr, n * elem_bytes, rows, stride}; }
};

bool same_geometry(const Geometry &a, const Geometry &b) {
    return a.elem_bytes == b.elem_bytes && same_bytes(a.bytes(), b.bytes());
}

bool contiguous(const Geometry &g) { return g.bytes().canonical().rows == 1; }

// Can an operand of geometry g (equal to the temporary's up to canonical form) address d instead?
// A contiguous d takes any split of its bytes into rows; a strided one only its own rows.
bool can_address(const Geometry &g, const Geometry &d) { return contiguous(d) || (g.n == d.n && g.rows == d.rows); }

// The row stride an operand of geometry g (can_address(g, d)) takes to address d.
int64_t stride_for(const Geometry &g, const Geometry &d) {
    if (g.rows == 1) return d.stride;  // unused by one row; keep the copy's
    return contiguous(d) ? g.n * g.elem_bytes : d.stride;
}

// The fields of an operand's geometry are constants (no loop terms): what the comparisons assume.
bool constant_geometry(const SymInstruction &in, const SfuOperands &l, const SfuOperands::Operand &o) {
    return !in.f[o.stride].depends_on_loops() && !in.f[l.n].depends_on_loops() && !in.f[l.rows].depends_on_loops();
}

Geometry geometry(const SymInstruction &in, const SfuOperands &l, const SfuOperands::Operand &o) {
    return {in.f[o.addr], in.f[o.stride].base, in.f[l.n].base, in.f[l.rows].base, o.elem_bytes};
}

// The bytes an operand covers over all iterations of the enclosing loops.
std::vector<ScratchpadAccess> range_of(const Geometry &g, const std::vector<int64_t> &trips, bool write) {
    return g.bytes().range(trips, write);
}

// In list order from `from` (inclusive) to `to` (exclusive): is the first item that touches
// `range` one that writes it without reading it (or does no item touch it)?
bool first_touch_is_plain_write(const std::vector<ProgramNode> &list, size_t from, size_t to,
                                const std::vector<ScratchpadAccess> &range, const std::vector<int64_t> &trips) {
    for (size_t i = from; i < to; i++) {
        const std::vector<ScratchpadAccess> acc = node_accesses(list[i], trips);
        if (!ranges_meet(acc, range)) continue;
        if (list[i].kind != ProgramNode::Kind::Instruction) return false;
        for (const auto &a : acc) {
            if (!a.write && a.lo < range[0].hi && range[0].lo < a.hi) return false;
        }
        return true;
    }
    return true;
}

// Tries to forward the copy at list[c]; true when it was removed.
bool forward_one(std::vector<ProgramNode> &list, size_t c, const std::vector<int64_t> &trips) {
    const SymInstruction &copy = list[c].inst;
    SfuOperands cl;
    if (list[c].kind != ProgramNode::Kind::Instruction || copy.op != isa::Opcode::Copy || !sfu_operands(copy, &cl)) {
        return false;
    }
    const SfuOperands::Operand &cdst = cl.ops[0], &csrc = cl.ops[1];
    if (mode_of(copy, csrc) != 0 || !copy.f[csrc.addr].temporary) return false;
    if (!constant_geometry(copy, cl, csrc) || !constant_geometry(copy, cl, cdst)) return false;
    const Geometry t = geometry(copy, cl, csrc), d = geometry(copy, cl, cdst);
    const std::vector<ScratchpadAccess> t_range = range_of(t, trips, true), d_range = range_of(d, trips, true);
    if (ranges_meet(t_range, d_range)) return false;

    // The producer: the last item before the copy that writes the temporary. Items in between
    // may only read it, with its geometry.
    struct Reader {
        size_t item;
        int addr_field, stride_field;
        Geometry g;
    };
    std::vector<Reader> readers;  // the operands between producer and copy that read the temporary
    size_t p = c;
    bool found = false;
    while (!found && p > 0) {
        p--;
        const ProgramNode &n = list[p];
        if (!touches(n, t_range, trips)) continue;
        SfuOperands l;
        if (n.kind != ProgramNode::Kind::Instruction || !sfu_operands(n.inst, &l)) return false;
        bool writes = false;
        for (const auto &o : l.ops) {
            if (mode_of(n.inst, o) >= 2) continue;
            const Geometry g = geometry(n.inst, l, o);
            if (o.write) {
                if (!ranges_meet(range_of(g, trips, true), t_range)) continue;
                if (!constant_geometry(n.inst, l, o) || !same_geometry(g, t) || !can_address(g, d)) return false;
                writes = true;
            } else if (ranges_meet(range_of(g, trips, false), t_range)) {
                if (mode_of(n.inst, o) != 0 || !constant_geometry(n.inst, l, o) || !same_geometry(g, t) ||
                    !can_address(g, d)) {
                    return false;
                }
                readers.push_back({p, o.addr, o.stride, g});
            }
        }
        if (writes) {
            if (!readers.empty() && readers.back().item == p) return false;  // the producer reads its own result
            found = true;
        }
    }
    if (!found) return false;
    const ProgramNode &producer = list[p];
    SfuOperands pl;
    if (producer.kind != ProgramNode::Kind::Instruction || !sfu_operands(producer.inst, &pl)) return false;
    if (!same_geometry(geometry(producer.inst, pl, pl.ops[0]), t)) return false;

    // Nothing between the producer and the copy touches the destination.
    for (size_t i = p + 1; i < c; i++) {
        if (touches(list[i], d_range, trips)) return false;
    }
    // The producer reads the destination only in place, element for element.
    for (size_t k = 1; k < pl.ops.size(); k++) {
        const auto &o = pl.ops[k];
        if (mode_of(producer.inst, o) >= 2) continue;
        const Geometry g = geometry(producer.inst, pl, o);
        if (!ranges_meet(range_of(g, trips, false), d_range)) continue;
        if (mode_of(producer.inst, o) != 0 || !same_geometry(g, d)) return false;
    }
    // The temporary is dead outside [producer, copy]: before the producer and after the copy,
    // its first use is a fresh write.
    if (!first_touch_is_plain_write(list, 0, p, t_range, trips)) return false;
    if (!first_touch_is_plain_write(list, c + 1, list.size(), t_range, trips)) return false;

    // Rewrite: the producer writes the destination, the readers read it, the copy goes.
    SymInstruction &pi = list[p].inst;
    const Geometry pg = geometry(pi, pl, pl.ops[0]);
    pi.f[pl.ops[0].addr] = d.addr;
    pi.f[pl.ops[0].stride].base = stride_for(pg, d);
    for (const Reader &r : readers) {
        SymInstruction &ri = list[r.item].inst;
        ri.f[r.addr_field] = d.addr;
        ri.f[r.stride_field].base = stride_for(r.g, d);
    }
    list.erase(list.begin() + (std::ptrdiff_t)c);
    return true;
}

int forward_in(std::vector<ProgramNode> &list, std::vector<int64_t> &trips) {
    int removed = 0;
    for (ProgramNode &n : list) {
        if (n.kind != ProgramNode::Kind::Loop) continue;
        trips.push_back(n.trip);
        removed += forward_in(n.body, trips);
        trips.pop_back();
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t c = 0; c < list.size(); c++) {
            if (forward_one(list, c, trips)) {
                removed++;
                changed = true;
                break;
            }
        }
    }
    return removed;
}

}  // namespace

int forward_sfu_copies(std::vector<ProgramNode> &tree) {
    std::vector<int64_t> trips;
    return forward_in(tree, trips);
}

}  // namespace compiler
}  // namespace spyre
