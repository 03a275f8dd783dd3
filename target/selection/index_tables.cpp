// Loop indices used as values in SFU arithmetic (`f32(x)`, a causal mask
// `select(x <= y, ...)` under a serial loop, `x * y`): the SFU has no iota,
// so each core gets tables of consecutive int32 values in its scratchpad,
// filled once before its first instruction (a copy of the first value, then
// adds that double the filled part: about log2(entries) SFU instructions).
// An index affine in the hardware loops is then an ordinary operand: a dense
// ramp reads the table at an address that moves with the loops, a scalar
// index reads one entry as a per-row scalar. Everything else about an index
// (products, casts, comparisons) is SFU arithmetic on those operands.
//
// Assumes: the tables are placed above every buffer placed so far and never
// released, so nothing placed later overlaps them, and the fills run before
// the core's first instruction, so every use reads a filled table.
#include "selection/core_selector.h"

namespace spyre {
namespace compiler {
namespace selection {

bool reads_no_memory(const Expr &e) {
    class Finder : public IRVisitor {
    public:
        bool found = false;

    private:
        using IRVisitor::visit;
        void visit(const Load *) override { found = true; }
        void visit(const Call *op) override {
            found = true;
            IRVisitor::visit(op);
        }
    } f;
    e.accept(&f);
    return !f.found;
}

SymOperand CoreSelector::index_table(int64_t lo, int64_t hi) {
    const auto key = std::make_pair(lo, hi);
    auto it = index_tables_.find(key);
    if (it == index_tables_.end()) {
        const int64_t entries = hi - lo + 1;
        const int64_t bytes = entries * 4;
        if (bytes > m_.scratchpad_bytes / 16) {
            fail("the index values " + std::to_string(lo) + " to " + std::to_string(hi) + " used in arithmetic need a "
                 "table of " + std::to_string(bytes) + " bytes in the scratchpad (the SFU has no iota), more than a "
                 "sixteenth of it (" + std::to_string(m_.scratchpad_bytes / 16) + " bytes): compute the index "
                 "values over a smaller tile, or pass them in as an input tensor");
        }
        const std::string name = "index_table." + std::to_string(lo) + "." + std::to_string(hi);
        const int64_t address = plan_.allocate_above_peak(name, bytes);
        const Type i32 = Int(32);
        SfuSource first;
        first.mode = 2;
        first.imm = (uint32_t)(int32_t)lo;
        emit_sfu(index_table_fills_, isa::Opcode::Copy, constant(address), {first}, 1, i32);
        const int64_t widest = std::max<int64_t>(1, m_.sfu_max_vector_lanes);
        for (int64_t filled = 1; filled < entries;) {
            // table[filled + i] = table[filled - n + i] + n, for i < n.
            const int64_t n = std::min({filled, entries - filled, widest});
            SfuSource from, step;
            from.mode = 0;
            from.addr = constant(address + (filled - n) * 4);
            step.mode = 2;
            step.imm = (uint32_t)(int32_t)n;
            emit_sfu(index_table_fills_, isa::Opcode::Add, constant(address + filled * 4), {from, step}, (int)n, i32);
            filled += n;
        }
        it = index_tables_.emplace(key, address).first;
    }
    return constant(it->second);
}

bool CoreSelector::index_operand(const Expr &e, SfuSource *s) {
    if (e.type().element_of() != Int(32) || !reads_no_memory(e)) return false;
    Expr scalar = e;
    int64_t lanes = 1;
    if (const Ramp *r = e.as<Ramp>()) {
        if (!is_const_one(r->stride) || r->base.type().is_vector()) return false;
        scalar = r->base;
        lanes = r->lanes;
    } else if (const Broadcast *b = e.as<Broadcast>()) {
        scalar = b->value;
    } else if (e.type().is_vector()) {
        return false;
    }
    if (scalar.type().is_vector()) return false;
    if (!e.as<Ramp>() && !env_.depends_on_loops(scalar)) {
        // One value on this core (the core index, loops of one iteration): an immediate.
        s->mode = 2;
        s->imm = (uint32_t)(int32_t)env_.evaluate(scalar, {});
        return true;
    }
    const std::optional<SymOperand> a = env_.affine_in_loops(scalar);
    if (!a) return false;
    // The values the operand takes over the loop box, each lane included.
    int64_t lo = a->base, hi = a->base + lanes - 1;
    const std::vector<int64_t> &trips = env_.loop_trips();
    for (size_t level = 0; level < trips.size(); level++) {
        const int64_t span = a->coef_at(level) * (trips[level] - 1);
        (span < 0 ? lo : hi) += span;
    }
    const SymOperand table = index_table(lo, hi);
    s->mode = e.as<Ramp>() ? 0 : 1;
    s->addr = scaled(*a, 4, table.base - lo * 4);
    return true;
}

bool CoreSelector::computed_index_scalar(const Expr &v, SfuSource *s, std::vector<ProgramNode> &out) {
    if (v.type().is_vector() || !reads_no_memory(v)) return false;
    SfuSource direct;
    if (index_operand(v, &direct)) {
        *s = direct;
        return true;
    }
    s->mode = 1;
    s->addr = new_temp(1, v.type());
    compile_into(v, s->addr, out);
    return true;
}

}  // namespace selection
}  // namespace compiler
}  // namespace spyre
