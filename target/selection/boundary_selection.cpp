// Instruction selection for boundary conditions (see core_selector.h).
//
// Expects: the device region of one core, its core index fixed (a constant of
// the index environment), in the form Halide's lowering leaves a staged
// boundary Func (`BoundaryConditions::repeat_edge`, `constant_exterior`, or
// clamps and selects written on the indices, staged with stage_in_scratchpad,
// whose tile starts on a stick boundary):
//   - the loop partitioning the `likely` tags trigger: `if (core < 1) ...`
//     around a prologue, lets and loop extents that are min/max of the core
//     index;
//   - stores into the staged tile whose value is a load of a kernel input at a
//     clamped vector index (`input[max(min(ramp(..), 127), 0)]`), a broadcast
//     of a scalar load (`x32(input[y * 128 + 127])`), or a select on the
//     indices (`select(x < 0 || x >= W, 0, input[...])`).
// Guarantees:
//   - an IfThenElse whose condition does not move inside the core is replaced
//     by the branch it takes (for this core);
//   - a loop whose iterations read the boundary differently (another side of
//     a select, a clamped index that stops moving, an edge stick instead of
//     interior sticks) is walked as consecutive loops over runs of iterations
//     that each read one way, so every index in a run is affine again;
//   - in a run, a select on the indices takes its one branch; a dense clamped
//     index is one whole-stick DMA; an index that is one element for every
//     lane (the edge) is one DMA of the stick holding that element into the
//     destination and one `sfu.copy` broadcasting it over the vector (in
//     place: the row is read before it is written); a constant is an SFU fill.
//   - a select on the indices inside SFU arithmetic whose lanes differ (a
//     causal mask) uses a static 1/0 mask: an SFU fill of zeros, then ones
//     over each run of true lanes (static_mask; the lane pattern is part of
//     a run's signature, so it is the same over the run). A pattern that still
//     moves inside a run (a causal mask under a serial tile loop) is compared
//     on the SFU at every iteration, the indices read from index tables
//     (index_tables.cpp).
// Anything else (an edge inside a stick, a select on a DRAM read whose lanes
// differ, a mirrored read) is a compile error naming the Func, the loop and
// the fix.
// Kept inside the CoreSelector (like copy_stage_selection.cpp): it needs the
// selector's environment of constants, loops and buffers, and it hands each
// run back to the ordinary selection.
#include <set>

#include "selection/core_selector.h"

namespace spyre {
namespace compiler {
namespace selection {

namespace {

// Is `e` (a vector or scalar condition) computed from indices only? Loads and floats are not.
class IndexOnly : public IRVisitor {
public:
    bool ok = true;

private:
    using IRVisitor::visit;
    void visit(const Load *) override { ok = false; }
    void visit(const Call *op) override {
        if (!op->is_intrinsic(Call::likely) && !op->is_intrinsic(Call::likely_if_innermost)) ok = false;
        IRVisitor::visit(op);
    }
    void visit(const FloatImm *) override { ok = false; }
};

bool index_only(const Expr &e) {
    if (!e.type().is_bool()) return false;
    IndexOnly v;
    e.accept(&v);
    return v.ok;
}

// Does a store's value read through a boundary: a select on the indices, a DRAM-shaped load at an
// index that is not a plain ramp, or a broadcast of a scalar load?
class BoundaryReads : public IRVisitor {
public:
    bool found = false;

private:
    using IRVisitor::visit;
    void visit(const Select *op) override {
        if (index_only(op->condition)) found = true;
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        Expr v = op->value;
        while (const Select *s = v.as<Select>()) v = s->false_value;
        if (const Broadcast *b = v.as<Broadcast>()) {
            if (b->value.as<Load>()) found = true;
        }
        if (const Load *ld = v.as<Load>()) {
            const Ramp *r = ld->index.as<Ramp>();
            if (!r && ld->type.is_vector()) found = true;
            if (r && clamps(r->base)) found = true;
        }
        IRVisitor::visit(op);
    }
public:
    static bool clamps(const Expr &e) {
        class Finder : public IRVisitor {
        public:
            bool found = false;

        private:
            using IRVisitor::visit;
            void visit(const Min *) override { found = true; }
            void visit(const Max *) override { found = true; }
            void visit(const Select *) override { found = true; }
        } f;
        e.accept(&f);
        return f.found;
    }
};

int64_t floor_mod(int64_t a, int64_t b) {
    const int64_t r = a % b;
    return r < 0 ? r + b : r;
}

}  // namespace

namespace {
// The loops an index moves with (by name), for messages: the innermost loop of a run may have
// one iteration, and then it is a constant rather than a hardware loop.
std::string loops_of(const Expr &index) {
    std::vector<std::string> names;
    class Names : public IRVisitor {
    public:
        std::vector<std::string> *out;

    private:
        using IRVisitor::visit;
        void visit(const Variable *v) override {
            if (v->name.find(".s") != std::string::npos &&
                std::find(out->begin(), out->end(), v->name) == out->end()) {
                out->push_back(v->name);
            }
        }
    } n;
    n.out = &names;
    index.accept(&n);
    std::string s;
    for (const std::string &x : names) s += (s.empty() ? "" : ", ") + std::string("'") + x + "'";
    return s.empty() ? s : " (in loop " + s + ")";
}
}  // namespace

namespace {
// A min, max or select over the lanes of a vector (a clamp of a vector index): what a boundary
// condition makes of a vectorized read. Scalar ones (a loop base under ShiftInwards, a Func's
// bounds) do not count.
bool clamps_lanes(const Expr &e) {
    class Finder : public IRGraphVisitor {  // each shared subexpression once
    public:
        bool found = false;

    private:
        using IRGraphVisitor::visit;
        void visit(const Min *op) override { found |= op->type.is_vector(); IRGraphVisitor::visit(op); }
        void visit(const Max *op) override { found |= op->type.is_vector(); IRGraphVisitor::visit(op); }
        void visit(const Select *op) override { found |= op->type.is_vector(); IRGraphVisitor::visit(op); }
    } f;
    e.accept(&f);
    return f.found;
}
}  // namespace

std::string CoreSelector::inline_boundary_error(const Expr &e, const std::string &what) const {
    // The value lets (vectors, selected as SFU values) expanded, then the index lets.
    const Expr expanded = env_.with_lets(expand_lets(e, vector_let_values_));
    // An index (a vector of element offsets) whose lanes are clamped, or a condition on the
    // indices alone (no loaded value in it) that no SFU instruction computes.
    const bool clamped_index = !e.type().is_bool() && clamps_lanes(expanded);
    if (!clamped_index && !index_only(expanded)) return "";
    return what + " " + to_text(e) + (clamped_index ? " clamps the indices" : " is a condition on the indices") +
           ": a boundary condition (or a mask) inlined into '" + display(func_) +
           "' reads the staged tensor at other elements in different lanes, which the SFU cannot do (it reads "
           "whole sticks in order); stage the Func that applies the boundary itself "
           "(stage_in_scratchpad(<the boundary Func>, <its consumer>, at): the Func BoundaryConditions::repeat_edge "
           "or constant_exterior returns, or yours with the clamp or select) instead of the tensor's input.in(): its "
           "tile is then built with the halo, edges included (docs/scheduling.md, \"Boundary conditions\")";
}

std::string CoreSelector::boundary_hint() const {
    return "; boundary conditions compile when the staged boundary Func (BoundaryConditions::repeat_edge or "
           "constant_exterior of the input, with the true extents as bounds) is staged with stage_in_scratchpad "
           "and every edge of the stick dimension falls on a stick boundary (docs/scheduling.md, \"Boundary "
           "conditions\")";
}

bool CoreSelector::resolve_static_condition(const IfThenElse *op, std::vector<ProgramNode> &out) {
    if (env_.depends_on_loops(op->condition)) return false;
    int64_t taken = 0;
    try {
        taken = env_.evaluate(op->condition, std::vector<int64_t>(env_.loop_depth(), 0));
    } catch (const CompileError &) {
        return false;
    }
    if (taken) walk(op->then_case, out);
    else walk(op->else_case, out);
    return true;
}

// Points of the current loop box at which a run's reads are checked: every point of a small box,
// otherwise its corners.
std::vector<std::vector<int64_t>> CoreSelector::box_sample() const {
    const std::vector<int64_t> &trips = env_.loop_trips();
    const int depth = (int)trips.size();
    uint64_t points = 1;
    for (int64_t t : trips) points = points * (uint64_t)t > 4097 ? 4097 : points * (uint64_t)t;
    std::vector<std::vector<int64_t>> out;
    if (points <= 4096) {
        std::vector<int64_t> p(depth, 0);
        while (true) {
            out.push_back(p);
            int d = depth - 1;
            for (; d >= 0; d--) {
                if (++p[d] < trips[d]) break;
                p[d] = 0;
            }
            if (d < 0) break;
        }
        return out;
    }
    for (uint32_t mask = 0; mask < (1u << std::min(depth, 12)); mask++) {
        std::vector<int64_t> p(depth, 0);
        for (int d = 0; d < depth; d++) p[d] = (mask >> d & 1) ? trips[d] - 1 : 0;
        out.push_back(p);
    }
    return out;
}

// How a store's value reads the boundary at the current constants (outer loops at their first
// iteration): a letter per decision and the numbers that move with the loop.
void CoreSelector::describe_boundary_value(const Expr &value, std::string *sig, std::vector<int64_t> *nums) const {
    const std::vector<int64_t> point(env_.loop_depth(), 0);
    const int lanes = value.type().lanes();
    if (const Select *s = value.as<Select>()) {
        if (!index_only(s->condition)) return;
        int trues = 0, first = -1;
        for (int l = 0; l < lanes; l++) {
            const bool t = env_.evaluate_lane(s->condition, l, point) != 0;
            trues += t;
            if (t && first < 0) first = l;
        }
        if (trues == lanes) {
            *sig += 'T';
            describe_boundary_value(s->true_value, sig, nums);
        } else if (trues == 0) {
            *sig += 'F';
            describe_boundary_value(s->false_value, sig, nums);
        } else {
            // A mask (static_mask): the same lanes over a run, so in the signature itself.
            *sig += "M" + std::to_string(trues) + ":" + std::to_string(first);
        }
        return;
    }
    if (const Broadcast *b = value.as<Broadcast>()) {
        if (const Load *ld = b->value.as<Load>()) {
            *sig += 'E';
            nums->push_back(env_.evaluate(ld->index, point));
        }
        return;
    }
    if (const Load *ld = value.as<Load>(); ld && !dram_tensor(ld->name)) return;
    if (!value.as<Load>()) {
        // Computed values: the lane pattern of every select on the indices inside them (masks).
        class Masks : public IRVisitor {
        public:
            const IndexEnvironment *env = nullptr;
            std::string *sig = nullptr;

        private:
            using IRVisitor::visit;
            void visit(const Select *o) override {
                if (index_only(o->condition)) {
                    const std::vector<int64_t> point(env->loop_depth(), 0);
                    int64_t trues = 0, first = -1;
                    for (int l = 0; l < o->type.lanes(); l++) {
                        const bool t = env->evaluate_lane(o->condition, l, point) != 0;
                        trues += t;
                        if (t && first < 0) first = l;
                    }
                    // In the signature itself: a mask must be the same, not move, over a run.
                    *sig += "m" + std::to_string(trues) + ":" + std::to_string(first);
                }
                IRVisitor::visit(o);
            }
        } masks;
        masks.env = &env_;
        masks.sig = sig;
        value.accept(&masks);
        return;
    }
    if (const Load *ld = value.as<Load>()) {
        if (!ld->type.is_vector()) return;
        const int64_t v0 = env_.evaluate_lane(ld->index, 0, point);
        bool dense = true, same = true;
        for (int l = 1; l < lanes; l++) {
            const int64_t v = env_.evaluate_lane(ld->index, l, point);
            dense = dense && v == v0 + l;
            same = same && v == v0;
        }
        *sig += dense ? 'D' : same ? 'E' : 'X';
        nums->push_back(v0);
    }
}

// The boundary reads of every store in `s`, with inner loops at their first and last iterations.
bool CoreSelector::boundary_signature(const Stmt &s, std::string *sig, std::vector<int64_t> *nums) {
    if (!s.defined()) return true;
    if (const Block *b = s.as<Block>()) return boundary_signature(b->first, sig, nums) && boundary_signature(b->rest, sig, nums);
    if (const LetStmt *l = s.as<LetStmt>()) {
        if (l->value.type().is_vector() || !l->value.type().is_int_or_uint()) return boundary_signature(l->body, sig, nums);
        // Popped on every exit, a CompileError of an evaluation below included: the caller
        // catches it and takes the ordinary path, which must see the environment unchanged.
        struct LetScope {
            IndexEnvironment &env;
            const std::string &name;
            ~LetScope() { env.pop_let(name); }
        };
        env_.push_let(l->name, l->value);
        LetScope scope{env_, l->name};
        return boundary_signature(l->body, sig, nums);
    }
    if (const ProducerConsumer *pc = s.as<ProducerConsumer>()) return boundary_signature(pc->body, sig, nums);
    if (const Allocate *a = s.as<Allocate>()) {
        // A buffer allocated inside the loop (a tile staged at it): its stores are described too.
        // Removed on every exit, a CompileError of an evaluation below included (as LetScope).
        struct AllocationScope {
            std::set<std::string> &names;
            const std::string &name;
            bool added;
            ~AllocationScope() {
                if (added) names.erase(name);
            }
        } scope{signature_allocations_, a->name, signature_allocations_.insert(a->name).second};
        return boundary_signature(a->body, sig, nums);
    }
    if (const IfThenElse *i = s.as<IfThenElse>()) {
        const std::vector<int64_t> point(env_.loop_depth(), 0);
        const bool taken = env_.evaluate(i->condition, point) != 0;
        *sig += taken ? '?' : '!';
        return boundary_signature(taken ? i->then_case : i->else_case, sig, nums);
    }
    if (const For *f = s.as<For>()) {
        const std::vector<int64_t> point(env_.loop_depth(), 0);
        const int64_t min = env_.evaluate(f->min, point), trip = env_.evaluate(f->extent, point);
        // Inner trip counts in the signature itself: a hardware loop's extent cannot move.
        *sig += "(" + std::to_string(trip) + ":";
        // Every iteration of a short inner loop (masks differ in the middle), else its first and last.
        std::vector<int64_t> at;
        if (trip <= 64) {
            for (int64_t i = 0; i < trip; i++) at.push_back(i);
        } else {
            at = {0, trip - 1};
        }
        for (int64_t i : at) {
            const bool shadowed = env_.has_constant(f->name);
            if (shadowed) return false;
            struct ConstantScope {  // unbound on every exit, as the let above
                IndexEnvironment &env;
                const std::string &name;
                ~ConstantScope() { env.unbind_constant(name); }
            };
            env_.bind_constant(f->name, min + i);
            ConstantScope scope{env_, f->name};
            if (!boundary_signature(f->body, sig, nums)) return false;
        }
        *sig += ')';
        return true;
    }
    if (const Store *st = s.as<Store>()) {
        if (scratchpad_buffer(st->name) || signature_allocations_.count(st->name)) {
            describe_boundary_value(st->value, sig, nums);
        }
        return true;
    }
    return true;
}

// Does a loop inside `body` have an extent computed from `var` (through the body's lets)? (A min
// that moves is counted from 0 by visit_for; an extent cannot move inside one hardware loop.)
// Halide's own partitioning of a boundary Func inside a tile loop leaves such loops (a first tile
// with one row of the top edge more): the tile loop is split where their trip counts change.
bool inner_loops_move_with(const Stmt &body, const std::string &var) {
    class Finder : public IRVisitor {
    public:
        explicit Finder(const std::string &var) { moving_.insert(var); }
        bool found = false;

    private:
        std::set<std::string> moving_;
        using IRVisitor::visit;
        bool moves(const Expr &e) const {
            bool m = false;
            for (const std::string &v : moving_) m = m || expr_uses_var(e, v);
            return m;
        }
        void visit(const LetStmt *op) override {
            if (moves(op->value)) moving_.insert(op->name);
            IRVisitor::visit(op);
        }
        void visit(const For *op) override {
            found = found || moves(op->extent);
            IRVisitor::visit(op);
        }
    } f(var);
    body.accept(&f);
    return f.found;
}

// Loop partitioning by the backend: when the iterations of `op` read the boundary differently,
// walk it as consecutive loops over runs of iterations that read one way each.
// Runs a loop is split into when only its inner loops' trip counts change (no boundary read).
constexpr size_t kMaxRunsForMovingExtents = 16;

bool CoreSelector::try_partition_boundary_loop(const For *op, int64_t min, int64_t trip, std::vector<ProgramNode> &out) {
    BoundaryReads reads;
    op->body.accept(&reads);
    const bool moving_extents_only = !reads.found && inner_loops_move_with(op->body, op->name);
    if ((!reads.found && !moving_extents_only) || env_.has_constant(op->name)) return false;
    std::vector<std::pair<int64_t, int64_t>> runs;  // [begin, end) iterations
    try {
        std::string prev_sig;
        std::vector<int64_t> prev, step;
        int64_t begin = 0;
        for (int64_t i = 0; i < trip; i++) {
            std::string sig;
            std::vector<int64_t> nums;
            env_.bind_constant(op->name, min + i);
            const bool ok = boundary_signature(op->body, &sig, &nums);
            env_.unbind_constant(op->name);
            if (!ok) return false;
            const bool alike = sig == prev_sig && nums.size() == prev.size();
            bool same = i > begin && alike;
            if (same && i - begin >= 2) {
                for (size_t k = 0; k < nums.size() && same; k++) same = nums[k] - prev[k] == step[k];
            }
            if (!same && alike && i - begin == 2) {
                // Two iterations fit any step: when the third breaks it, the first is the odd one
                // (a tile at the image's edge), so it is a run of its own and the second starts
                // the next run with this one.
                runs.push_back({begin, begin + 1});
                begin++;
                same = true;
            }
            if (same && i - begin == 1) {
                step.assign(nums.size(), 0);
                for (size_t k = 0; k < nums.size(); k++) step[k] = nums[k] - prev[k];
            }
            if (i > 0 && !same) {
                runs.push_back({begin, i});
                begin = i;
            }
            prev_sig = sig;
            prev = nums;
        }
        runs.push_back({begin, trip});
    } catch (const CompileError &) {
        env_.unbind_constant(op->name);
        return false;  // not a static boundary: the ordinary path reports what it cannot compile
    }
    if (runs.size() < 2) return false;
    // Inner extents that change at every iteration (a triangular loop, j < i) would unroll the loop
    // into one run per iteration: refused as before ("an extent that changes"), unless few.
    if (moving_extents_only && runs.size() > kMaxRunsForMovingExtents) return false;
    for (const auto &[b, e] : runs) {
        const Stmt part = For::make(op->name, (int)(min + b), (int)(e - b), op->for_type, op->device_api, op->body);
        const For *f = part.as<For>();
        // Each run reads one way; partitioning it again finds one run and takes the ordinary path.
        visit_for(f, out);
    }
    return true;
}

bool CoreSelector::reads_dram(const Expr &e) const {
    class Finder : public IRVisitor {
    public:
        const CoreSelector *self = nullptr;
        bool found = false;

    private:
        using IRVisitor::visit;
        void visit(const Load *op) override {
            found = found || self->dram_tensor(op->name) != nullptr;
            IRVisitor::visit(op);
        }
    } f;
    f.self = this;
    e.accept(&f);
    return f.found;
}

// A select on the indices inside SFU arithmetic: its lanes are known at compile time, the same at
// every point of the run's loop box (loop runs make them so), so the mask is filled in scratchpad
// once per use: zeros, then ones over each run of true lanes.
bool CoreSelector::static_mask(const Expr &cond, int lanes, const Type &t, SfuSource *mask, std::vector<ProgramNode> &out) {
    if (!index_only(cond)) return false;
    std::vector<bool> pattern;
    for (const std::vector<int64_t> &p : box_sample()) {
        std::vector<bool> here(lanes);
        for (int l = 0; l < lanes; l++) here[l] = env_.evaluate_lane(cond, l, p) != 0;
        if (pattern.empty()) pattern = here;
        if (here != pattern) {
            // Lanes that move with a loop: the comparison is computed on the SFU at every iteration,
            // its indices read from index tables (compare(), index_tables.cpp).
            return false;
        }
    }
    const SymOperand m = new_temp(lanes, t);
    SfuSource zero, one;
    zero.mode = one.mode = 2;
    zero.imm = immediate_bits(make_zero(t.element_of()), t);
    one.imm = immediate_bits(make_one(t.element_of()), t);
    emit_sfu(out, isa::Opcode::Copy, m, {zero}, lanes, t);
    const int64_t eb = t.bytes();
    for (int l = 0; l < lanes;) {
        if (!pattern[l]) {
            l++;
            continue;
        }
        int e = l;
        while (e < lanes && pattern[e]) e++;
        SymOperand at = m;
        at.base += l * eb;
        emit_sfu(out, isa::Opcode::Copy, at, {one}, e - l, t);
        l = e;
    }
    mask->mode = 0;
    mask->addr = m;
    return true;
}

Expr CoreSelector::resolve_index_selects(const Expr &value) {
    const Select *s = value.as<Select>();
    if (!s || !index_only(s->condition)) return value;
    const int lanes = value.type().lanes();
    int64_t trues = 0, total = 0;
    std::string mixed_at;
    for (const std::vector<int64_t> &p : box_sample()) {
        int t = 0;
        for (int l = 0; l < lanes; l++) t += env_.evaluate_lane(s->condition, l, p) != 0;
        if (t != 0 && t != lanes && mixed_at.empty()) {
            mixed_at = std::to_string(t) + " of " + std::to_string(lanes) + " lanes";
        }
        trues += t;
        total += lanes;
    }
    if (!mixed_at.empty() && reads_dram(value)) {
        fail("the select on the indices (" + to_text(s->condition) + ")" + display(loops_of(value)) +
             " takes both branches within one vector (" +
             mixed_at + " true): the SFU computes whole sticks, so a boundary must fall on a stick boundary. Make the "
             "extent of the stick dimension a whole number of sticks (" + std::to_string(lanes) + " lanes here), or "
             "stage the input itself and apply the select in a computed Func (a mask the SFU fills)" + boundary_hint());
    }
    // Lanes that differ (a mask the SFU computes, see static_mask), or lane-uniform but changing
    // over the loops: not a boundary this run resolves; the ordinary path.
    if (!mixed_at.empty() || (trues != 0 && trues != total)) return value;
    return resolve_index_selects(trues == total ? s->true_value : s->false_value);
}

bool CoreSelector::select_boundary_store(const Store *op, const SymOperand &dst, std::vector<ProgramNode> &out) {
    const Expr value = resolve_index_selects(op->value);
    const Type t = op->value.type();
    const int lanes = t.lanes();
    const int64_t eb = t.bytes();
    const BufferInfo *sp_dst = scratchpad_buffer(op->name);
    const Load *ld = value.as<Load>();
    Expr element;  // the edge element's flat index, when every lane reads it
    if (const Broadcast *b = value.as<Broadcast>()) {
        const Load *scalar = b->value.as<Load>();
        if (scalar && dram_tensor(scalar->name)) {
            ld = scalar;
            element = scalar->index;
        }
    }
    if (!ld || !dram_tensor(ld->name)) {
        if (value.same_as(op->value)) return false;
        // A select resolved to a constant or a computed value: the ordinary SFU path.
        const Stmt st = Store::make(op->name, value, op->index, op->param, op->predicate, op->alignment);
        visit_store(st.as<Store>(), out);
        return true;
    }
    const KernelTensor *src = dram_tensor(ld->name);
    if (!element.defined()) {
        if (ld->index.as<Ramp>()) {
            if (value.same_as(op->value)) return false;
            const Stmt st = Store::make(op->name, value, op->index, op->param, op->predicate, op->alignment);
            visit_store(st.as<Store>(), out);
            return true;
        }
        bool dense = true, same = true, reversed = false;
        std::string example;
        for (const std::vector<int64_t> &p : box_sample()) {
            const int64_t v0 = env_.evaluate_lane(ld->index, 0, p);
            bool d = true, s = true;
            int64_t prev = v0;
            for (int l = 1; l < lanes; l++) {
                const int64_t v = env_.evaluate_lane(ld->index, l, p);
                d = d && v == v0 + l;
                s = s && v == v0;
                reversed = reversed || v == prev - 1;
                prev = v;
            }
            if (!d && !s && example.empty()) {
                example = "lanes from element " + std::to_string(v0) + " to " +
                          std::to_string(env_.evaluate_lane(ld->index, lanes - 1, p));
            }
            dense = dense && d;
            same = same && s;
        }
        if (dense) {
            const Expr ramp = Ramp::make(extract_lane(ld->index, 0), 1, lanes);
            const Expr load = Load::make(ld->type, ld->name, ramp, ld->image, ld->param, const_true(lanes), ModulusRemainder());
            const Stmt st = Store::make(op->name, load, op->index, op->param, op->predicate, op->alignment);
            visit_store(st.as<Store>(), out);
            return true;
        }
        if (!same && reversed) {
            fail("the read of '" + display(ld->name) + "' (" + to_text(ld->index) + ")" + display(loops_of(ld->index)) +
                 " runs backwards across the edge (a mirrored boundary, BoundaryConditions::mirror_image or "
                 "mirror_interior): its halo is the image reversed, a permutation the SFU does not have. Use "
                 "repeat_edge or constant_exterior, or mirror the input into a padded tensor before the kernel" +
                 boundary_hint());
        }
        if (!same) {
            fail("the clamped read of '" + display(ld->name) + "' (" + to_text(ld->index) + ")" + display(loops_of(ld->index)) +
                 " stops at the edge inside a stick (" + (example.empty() ? std::string("its lanes change from run to run") : example) +
                 "): a vector must read either whole interior sticks or one edge element. Make the extent of the "
                 "stick dimension a whole number of sticks (" + std::to_string(m_.stick_bytes / eb) +
                 " lanes of " + type_text(t.element_of()) + ")" + boundary_hint());
        }
        element = extract_lane(ld->index, 0);
    }
    // An edge stick: the stick holding the edge element, then that element over the whole vector.
    if (dram_vector_stride(*src) != 1) {
        fail("the boundary of '" + display(ld->name) + "' is read along a stick dimension that is not dimension 0 of "
             "the tensor; boundary conditions need the default layout" + boundary_hint());
    }
    auto a = env_.affine_in_loops(element);
    if (!a) {
        fail("the edge element of '" + display(ld->name) + "' (" + to_text(element) +
             ") is not affine in the core's loops" + boundary_hint());
    }
    const int64_t stick = m_.stick_bytes / eb;
    const int64_t within = floor_mod(a->base, stick);
    for (int64_t c : a->coef) {
        if (c % stick != 0) {
            fail("the edge element of '" + display(ld->name) + "' (" + to_text(element) +
                 ") moves by part of a stick from one iteration to the next" + boundary_hint());
        }
    }
    SymOperand start = *a;
    start.base -= within;
    const SymOperand dram = dram_address(*src, start, ld->name, (int)stick);
    const SymOperand sp = scaled(dst, eb, sp_dst->address);
    check_stick_aligned(dram, ld->name);
    check_stick_aligned(sp, op->name);
    const int64_t row = m_.stick_bytes;
    emit_row_load(out, src->arg_index, dram, sp, row);
    SfuSource edge;
    edge.mode = 1;
    edge.addr = sp;
    edge.addr.base += within * eb;
    emit_sfu(out, isa::Opcode::Copy, sp, {edge}, lanes, t);
    return true;
}

}  // namespace selection
}  // namespace compiler
}  // namespace spyre
