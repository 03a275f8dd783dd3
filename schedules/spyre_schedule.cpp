// The Spyre scheduling vocabulary (see spyre_schedule.h and docs/scheduling.md).
#include "spyre_schedule.h"

#include "schedule_arithmetic.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "spyre/machine.h"
#include "schedule_context.h"
#include "selection/spyre_types.h"
#include "tensor_constraints.h"

namespace spyre {

using namespace Halide;

namespace {

// "Spyre schedule: <what>: <rule>", thrown as Halide's CompileError so that
// the generator driver and callers handle it like the backend's own errors.
[[noreturn]] void fail(const std::string &what, const std::string &rule) {
    throw Halide::CompileError("Spyre schedule: " + what + ": " + rule);
}

std::string describe(const std::string &directive, const Func &f, const std::string &arg = "") {
    std::string s = directive + "(Func '" + f.name() + "'";
    if (!arg.empty()) s += ", " + arg;
    return s + ")";
}

std::string quoted(const std::string &name) { return "'" + name + "'"; }

// The dimension a staged Func's sticks run along: that of the tensor it copies when it is a
// wrapper of one (in.in(): its value reads the tensor at its own vars, in order) and the tensor
// was declared with another stick dimension (constrain_tensor(..., stick_dim)); else 0.
int staged_stick_dim(const Func &f) {
    const Internal::Definition &def = f.function().definition();
    if (def.values().size() != 1) return 0;
    const Internal::Call *c = def.values()[0].as<Internal::Call>();
    if (!c || c->args.size() != f.args().size()) return 0;
    for (size_t i = 0; i < c->args.size(); i++) {
        const Internal::Variable *v = c->args[i].as<Internal::Variable>();
        if (!v || v->name != f.args()[i].name()) return 0;
    }
    // The tensor by its name, or through the Func Halide makes of an ImageParam or a generator
    // Input (`in_im(_0, _1)`, which calls the buffer itself).
    std::optional<SpyreTensorInfo> info = ScheduleContext::active().tensor(c->name);
    if (!info && c->call_type == Internal::Call::Halide && c->func.defined()) {
        const Internal::Function called(c->func);
        if (called.has_pure_definition() && called.values().size() == 1) {
            if (const Internal::Call *image = called.values()[0].as<Internal::Call>()) {
                info = ScheduleContext::active().tensor(image->name);
            }
        }
    }
    return info && info->stick_dim < (int)f.args().size() ? info->stick_dim : 0;
}

// Types with a stick layout on Spyre (the dtypes of the program format).
bool has_sticks(const Type &t) {
    return (t.is_float() && (t.bits() == 32 || t.bits() == 16)) || (t.is_int() && (t.bits() == 32 || t.bits() == 8));
}

void require_defined(const std::string &what, const Func &f) {
    if (!f.defined()) fail(what, "the Func has no definition yet; define it before scheduling it");
}

std::string type_name(const Type &t) {
    std::ostringstream os;
    os << t;
    return os.str();
}

// Stick lanes of f's type (every element of a Tuple has as many: argmax's int32 index beside a
// float32 value), or an error naming the rule.
int lanes_of(const std::string &what, const Func &f) {
    require_defined(what, f);
    const Type t = f.output_types()[0];
    for (const Type &other : f.output_types()) {
        if (other.bytes() != t.bytes()) {
            fail(what, "the elements of a Tuple-valued Func must have as many lanes per stick to share a stick layout "
                       "(this one mixes " + type_name(t) + " and " + type_name(other) + "; e.g. argmax of float16 "
                       "values has an int32 index: compute it in float32, or write it as two reductions, "
                       "docs/scheduling.md \"Loop indices as values\")");
        }
    }
    if (!has_sticks(t)) {
        std::ostringstream os;
        os << "the type " << t << " has no stick layout on Spyre (sticks are " << scheduling_machine().stick_bytes
           << " bytes of float32, float16, int32 or int8): " << compiler::spyre_type_fix(t);
        fail(what, os.str());
    }
    return stick_lanes(t);
}

// Halide qualifies the vars a split creates ("n.nr"); directives name them unqualified.
std::string unqualified(const std::string &name) {
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}

// Loop names of one stage, innermost first, unqualified (without Halide's __outermost).
std::vector<std::string> loops_of(const Internal::StageSchedule &s) {
    std::vector<std::string> names;
    for (const Internal::Dim &d : s.dims()) {
        if (d.var != Var::outermost().name()) names.push_back(unqualified(d.var));
    }
    return names;
}

std::string list(const std::vector<std::string> &names) {
    std::string s;
    for (const std::string &n : names) s += (s.empty() ? "" : ", ") + quoted(n);
    return s.empty() ? "(none)" : s;
}

bool contains(const std::vector<std::string> &v, const std::string &x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

// Is `at` a loop of some stage of `consumer` (RVars only exist in updates)?
void require_loop_of(const std::string &what, const Func &consumer, const VarOrRVar &at) {
    require_defined(what, consumer);
    std::vector<std::string> all;
    const Internal::Function fn = consumer.function();
    std::vector<const Internal::StageSchedule *> stages = {&fn.definition().schedule()};
    for (const Internal::Definition &u : fn.updates()) stages.push_back(&u.schedule());
    for (const Internal::StageSchedule *s : stages) {
        for (const std::string &n : loops_of(*s)) {
            if (n == at.name()) return;
            if (!contains(all, n)) all.push_back(n);
        }
    }
    fail(what, quoted(at.name()) + " is not a loop of the consumer Func '" + consumer.name() +
                   "' (its loops: " + list(all) + "); place the stage at one of them");
}

void compute_at(Func f, const Func &consumer, const VarOrRVar &at) {
    if (at.is_rvar) {
        f.compute_at(consumer, at.rvar);
    } else {
        f.compute_at(consumer, at.var);
    }
}


// A name for a new loop of `s` that is not taken yet.
std::string fresh(const std::vector<std::string> &taken, const std::string &want) {
    std::string n = want;
    while (contains(taken, n)) n += "_";
    return n;
}

std::string layout_string(const StickLayout &l) {
    std::string s = "stick=" + std::to_string(l.stick_dim) + " order=[";
    for (size_t i = 0; i < l.order.size(); i++) s += (i ? "," : "") + std::to_string(l.order[i]);
    return s + "]";
}

}  // namespace

// ---- sticks -------------------------------------------------------------

void stick_vectorize(Func f, const VarOrRVar &x) {
    const std::string what = describe("stick_vectorize", f, quoted(x.name()));
    const int lanes = lanes_of(what, f);
    const std::vector<std::string> loops = loops_of(f.function().definition().schedule());
    if (!contains(loops, x.name())) {
        fail(what, quoted(x.name()) + " is not a loop of its definition (its loops: " + list(loops) + ")");
    }
    f.vectorize(x, lanes);
}

void stick_vectorize(Func f, int update_index, const VarOrRVar &x) {
    const std::string what =
        describe("stick_vectorize", f, "update " + std::to_string(update_index) + ", " + quoted(x.name()));
    const int lanes = lanes_of(what, f);
    if (update_index < 0 || update_index >= f.num_update_definitions()) {
        fail(what, "it has " + std::to_string(f.num_update_definitions()) + " update definition(s); there is no update " +
                       std::to_string(update_index));
    }
    const std::vector<std::string> loops = loops_of(f.function().update(update_index).schedule());
    if (!contains(loops, x.name())) {
        fail(what, quoted(x.name()) + " is not a loop of the update (its loops: " + list(loops) + ")");
    }
    f.update(update_index).vectorize(x, lanes);
}

// ---- scratchpad ---------------------------------------------------------

// Does f read another Func or an input at an index clamped or selected from its own
// arguments (BoundaryConditions::repeat_edge / constant_exterior, clamp(x, 0, W - 1), ...)?
// Such a tile reaches past the tensor's edges; its halo is filled from the clamped reads.
bool reads_through_a_boundary(const Func &f) {
    class Finder : public Internal::IRVisitor {
    public:
        explicit Finder(const std::vector<Var> &args) {
            for (const Var &v : args) args_.insert(v.name());
        }
        bool found = false;

    private:
        using Internal::IRVisitor::visit;
        std::set<std::string> args_;
        std::set<std::string> seen_;
        int in_call_args_ = 0;
        bool uses_args(const Expr &e) {
            for (const std::string &a : args_) {
                if (Internal::expr_uses_var(e, a)) return true;
            }
            return false;
        }
        void visit(const Internal::Call *op) override {
            if (op->is_intrinsic(Internal::Call::likely) || op->is_intrinsic(Internal::Call::likely_if_innermost)) {
                found = true;
            }
            const bool access = op->call_type == Internal::Call::Halide || op->call_type == Internal::Call::Image;
            if (access) in_call_args_++;
            Internal::IRVisitor::visit(op);
            if (access) in_call_args_--;
            // An inlined Func called at f's own arguments (constant_exterior calls repeat_edge).
            if (op->call_type == Internal::Call::Halide && op->func.defined() && forwards_args(op) &&
                seen_.insert(op->name).second) {
                const Internal::Function g(op->func);
                if (!g.has_update_definition()) {
                    for (const Expr &v : g.values()) v.accept(this);
                }
            }
        }
        bool forwards_args(const Internal::Call *op) const {
            if (op->args.size() != args_.size()) return false;
            for (const Expr &a : op->args) {
                const Internal::Variable *v = a.as<Internal::Variable>();
                if (!v || !args_.count(v->name)) return false;
            }
            return true;
        }
        void visit(const Internal::Min *op) override {
            found = found || in_call_args_ > 0;
            Internal::IRVisitor::visit(op);
        }
        void visit(const Internal::Max *op) override {
            found = found || in_call_args_ > 0;
            Internal::IRVisitor::visit(op);
        }
        void visit(const Internal::Select *op) override {
            found = found || in_call_args_ > 0 || uses_args(op->condition);
            Internal::IRVisitor::visit(op);
        }
    } finder(f.args());
    if (!f.defined()) return false;
    for (const Expr &v : f.function().definition().values()) v.accept(&finder);
    return finder.found;
}

namespace {

// The Funcs Halide's inline reductions (sum, product, maximum, minimum; Halide/InlineReductions.h)
// make for `f`'s definition: single-valued Funcs with an update, named by the reduction, not yet
// placed in a memory (the user cannot name them to schedule them).
std::vector<Internal::Function> inline_reductions_of(const Func &f) {
    class Finder : public Internal::IRVisitor {
    public:
        std::vector<Internal::Function> found;

    private:
        using Internal::IRVisitor::visit;
        void visit(const Internal::Call *op) override {
            Internal::IRVisitor::visit(op);
            if (op->call_type != Internal::Call::Halide || !op->func.defined()) return;
            const Internal::Function g(op->func);
            static const char *names[] = {"sum", "product", "maximum", "minimum", "argmax", "argmin"};
            // Halide names them exactly so, and makes the names unique with "$<n>".
            bool named = false;
            for (const char *n : names) {
                const std::string base = n;
                named |= g.name() == base || g.name().rfind(base + "$", 0) == 0;
            }
            if (!named || !g.has_update_definition()) return;
            if (g.schedule().memory_type() != MemoryType::Auto) return;  // scheduled already
            for (const Internal::Function &h : found) {
                if (h.same_as(g)) return;
            }
            found.push_back(g);
        }
    } finder;
    if (f.defined()) {
        for (const Expr &v : f.function().definition().values()) v.accept(&finder);
    }
    return finder.found;
}

// Does the update read a Func or an input with a reduction variable as its first (stick)
// index? Then it reduces along the stick: one sfu.rowsum / sfu.rowmax per row, not vectors.
bool reduces_along_the_stick(const Internal::Function &g) {
    std::set<std::string> rvars;
    for (const Internal::ReductionVariable &rv : g.update(0).schedule().rvars()) rvars.insert(rv.var);
    class Finder : public Internal::IRVisitor {
    public:
        explicit Finder(const std::set<std::string> &r) : rvars_(r) {}
        bool found = false;

    private:
        const std::set<std::string> &rvars_;
        using Internal::IRVisitor::visit;
        void visit(const Internal::Call *op) override {
            if ((op->call_type == Internal::Call::Halide || op->call_type == Internal::Call::Image) && !op->args.empty()) {
                in_first_index_++;
                op->args[0].accept(this);
                in_first_index_--;
            }
            Internal::IRVisitor::visit(op);
        }
        void visit(const Internal::Variable *op) override { found = found || (in_first_index_ > 0 && rvars_.count(op->name)); }
        int in_first_index_ = 0;
    } finder(rvars);
    for (const Expr &v : g.update(0).values()) v.accept(&finder);
    return finder.found;
}

// An inline reduction in f's definition accumulates in the scratchpad at f's loop: vectors
// along its first argument, unless it reduces along the stick (a row reduction, one per row).
void stage_inline_reductions(const Func &f, const Func &consumer, const VarOrRVar &at) {
    for (const Internal::Function &g : inline_reductions_of(f)) {
        Func helper(g);
        accumulate_in_scratchpad(helper, consumer, at);
        if (reduces_along_the_stick(g)) {
            helper.update(0).unscheduled();  // one row reduction per row: its loops as Halide made them
        } else {
            stick_vectorize(helper, 0, helper.args()[0]);
        }
    }
}

// stage_in_scratchpad's placement with `sticks_per_vector` sticks per vector of the stick dimension.
void stage_with_vectors(Func f, Func consumer, const VarOrRVar &at, int sticks_per_vector) {
    const std::string what = describe("stage_in_scratchpad", f, "consumer '" + consumer.name() + "', " + quoted(at.name()));
    if (sticks_per_vector < 1) {
        fail(what, "sticks_per_vector is " + std::to_string(sticks_per_vector) + "; it must be at least 1");
    }
    const int stick_lanes = lanes_of(what, f), lanes = stick_lanes * sticks_per_vector;
    const int64_t max_lanes = scheduling_machine().sfu_max_vector_lanes;
    if (lanes > max_lanes) {
        fail(what, std::to_string(sticks_per_vector) + " sticks per vector are " + std::to_string(lanes) +
                       " lanes, more than the " + std::to_string(max_lanes) +
                       " one SFU instruction covers (sfu_max_vector_lanes); use fewer sticks per vector");
    }
    if (f.name() == consumer.name()) fail(what, "a Func cannot be staged inside its own loops");
    if (f.has_update_definition()) {
        fail(what, "it has update definitions, so it is an accumulator, not a staged copy; use accumulate_in_scratchpad");
    }
    if (f.dimensions() < 1) fail(what, "a zero-dimensional Func has no stick dimension to vectorize");
    require_loop_of(what, consumer, at);
    compute_at(f, consumer, at);
    // The stick dimension: the copied tensor's (staged_stick_dim), stored innermost in the tile.
    const int stick_dim = staged_stick_dim(f);
    const Var sticks = f.args()[stick_dim];
    if (stick_dim != 0) {
        std::vector<Var> storage{sticks};
        for (const Var &v : f.args()) {
            if (v.name() != sticks.name()) storage.push_back(v);
        }
        f.reorder_storage(storage);
    }
    // RoundUp: a region that is not whole sticks is computed over whole sticks from its
    // min. The default (ShiftInwards) would move the last vector below the region's min,
    // off the stick grid and, for a region narrower than a stick, before the tensor.
    f.store_in(MemoryType::VTCM).vectorize(sticks, lanes, TailStrategy::RoundUp);
    // A boundary Func's tile reaches past the tensor (x - 1 for a 3x3 stencil): start it on a
    // stick boundary so the interior is whole-stick DMA and the halo whole sticks of edge or
    // constant values (docs/scheduling.md, "Boundary conditions").
    if (reads_through_a_boundary(f)) f.align_bounds(sticks, stick_lanes);
    stage_inline_reductions(f, consumer, at);
}

}  // namespace

void stage_in_scratchpad(Func f, Func consumer, const VarOrRVar &at) { stage_with_vectors(f, consumer, at, 1); }

void accumulate_in_scratchpad(Func acc, Func consumer, const VarOrRVar &at) {
    const std::string what =
        describe("accumulate_in_scratchpad", acc, "consumer '" + consumer.name() + "', " + quoted(at.name()));
    const int lanes = lanes_of(what, acc);
    if (acc.name() == consumer.name()) fail(what, "an accumulator cannot be computed inside its own loops");
    if (!acc.has_update_definition()) {
        fail(what, "it has no update definition, so it accumulates nothing; stage plain Funcs with stage_in_scratchpad");
    }
    if (acc.dimensions() < 1) fail(what, "a zero-dimensional Func has no stick dimension to vectorize");
    require_loop_of(what, consumer, at);
    compute_at(acc, consumer, at);
    acc.store_in(MemoryType::VTCM).vectorize(acc.args()[0], lanes, TailStrategy::RoundUp);  // as stage_in_scratchpad
}

// ---- cores --------------------------------------------------------------

const Var &CoreSplit::serial_of(const Var &v) const {
    for (size_t i = 0; i < vars.size(); i++) {
        if (vars[i].name() == v.name()) return serial[i];
    }
    throw Halide::CompileError("Spyre schedule: CoreSplit::serial_of: '" + v.name() + "' was not split across the cores");
}

std::vector<int> plan_core_split(const std::string &func_name, const std::vector<CoreSplitDim> &dims,
                                 const CoreSplitOptions &options) {
    const std::string what = "split_across_cores(Func '" + func_name + "')";
    const int machine_cores = (int)scheduling_machine().cores;
    const int max_cores = options.max_cores > 0 ? options.max_cores : machine_cores;
    if (max_cores > machine_cores) {
        fail(what, "max_cores " + std::to_string(max_cores) + " is more than the machine's " +
                       std::to_string(machine_cores) + " cores");
    }
    if (options.min_cores > max_cores) {
        fail(what, "min_cores " + std::to_string(options.min_cores) + " is more than max_cores " + std::to_string(max_cores));
    }
    if (dims.empty()) fail(what, "no dimension to split: give at least one (Var, extent)");
    std::set<std::string> seen;
    int fixed = 1;
    for (const CoreSplitDim &d : dims) {
        const std::string v = quoted(d.var.name());
        if (!seen.insert(d.var.name()).second) fail(what, v + " is given twice");
        if (d.extent <= 0 || d.tile <= 0) {
            fail(what, v + " has extent " + std::to_string(d.extent) + " and tile " + std::to_string(d.tile) +
                           "; both must be positive");
        }
        if (d.extent % d.tile != 0) {
            fail(what, v + " has extent " + std::to_string(d.extent) + ", not a whole number of tiles of " +
                           std::to_string(d.tile) +
                           ": cores only get whole tiles; pad the tensor to the tile (constrain_tensor multiples)");
        }
        const int tiles = d.extent / d.tile;
        if (d.cores < 0 || (d.cores > 0 && tiles % d.cores != 0)) {
            fail(what, v + " asks for " + std::to_string(d.cores) + " cores, which do not divide its " +
                           std::to_string(tiles) + " tiles evenly (every core must get the same work)");
        }
        if (d.cores > 0) fixed *= d.cores;
    }
    if (fixed > max_cores) {
        fail(what, "the fixed core counts use " + std::to_string(fixed) + " cores, more than " + std::to_string(max_cores));
    }
    // Greedy in the order given: the largest divisor of the tile count that fits what is left.
    std::vector<int> cores;
    int budget = max_cores / fixed;
    for (const CoreSplitDim &d : dims) {
        if (d.cores > 0) {
            cores.push_back(d.cores);
            continue;
        }
        int best = 1;
        for (int c : divisors(d.extent / d.tile)) {
            if (c <= budget) best = c;
        }
        cores.push_back(best);
        budget /= best;
    }
    int total = 1;
    for (int c : cores) total *= c;
    if (total < options.min_cores) {
        std::string tiles;
        for (const CoreSplitDim &d : dims) {
            tiles += (tiles.empty() ? "" : ", ") + quoted(d.var.name()) + ": " + std::to_string(d.extent / d.tile) + " tiles";
        }
        fail(what, "no even split gives at least " + std::to_string(options.min_cores) + " cores (" + tiles +
                       ", at most " + std::to_string(max_cores) + " cores); the best uses " + std::to_string(total));
    }
    return cores;
}

CoreSplit split_across_cores(Func f, const std::vector<CoreSplitDim> &dims, const CoreSplitOptions &options) {
    const std::string what = describe("split_across_cores", f);
    require_defined(what, f);
    const Internal::StageSchedule &sched = f.function().definition().schedule();
    for (const Internal::Dim &d : sched.dims()) {
        if (d.for_type == Internal::ForType::Parallel) {
            fail(what, "the loop '" + unqualified(d.var) +
                           "' is already parallel; exactly one loop may be split across the cores, and this directive makes it");
        }
    }
    std::vector<std::string> pure;
    for (const Var &a : f.args()) pure.push_back(a.name());
    std::vector<std::string> loops = loops_of(sched);
    for (const CoreSplitDim &d : dims) {
        if (!contains(pure, d.var.name())) {
            fail(what, quoted(d.var.name()) + " is not a pure var of the Func (its vars: " + list(pure) +
                           "); only output dimensions are split across the cores");
        }
        if (!contains(loops, d.var.name())) {
            fail(what, quoted(d.var.name()) + " is no longer a loop of the Func (its loops: " + list(loops) +
                           "); call split_across_cores before splitting or fusing it");
        }
    }
    CoreSplit out;
    out.cores = plan_core_split(f.name(), dims, options);

    // Split every given dim into core and per-core parts (exact: extents are whole tiles).
    std::set<std::string> core_parts;
    for (size_t i = 0; i < dims.size(); i++) {
        const CoreSplitDim &d = dims[i];
        const std::string vn = d.var.name();
        Var c(fresh(loops, vn + "c"));
        loops.push_back(c.name());
        Var r(fresh(loops, vn + "r"));
        loops.push_back(r.name());
        const int per_core = d.extent / out.cores[i];
        f.split(d.var, c, r, per_core, TailStrategy::RoundUp);
        out.vars.push_back(d.var);
        out.serial.push_back(r);
        out.per_core.push_back(per_core);
        out.total_cores *= out.cores[i];
        core_parts.insert(c.name());
    }

    // Serial loops inside, in their current order; core parts outermost, in f's dimension order.
    std::vector<VarOrRVar> order, cores;
    for (const std::string &n : loops_of(f.function().definition().schedule())) {
        (core_parts.count(n) ? cores : order).push_back(VarOrRVar(n, false));
    }
    order.insert(order.end(), cores.begin(), cores.end());
    f.reorder(order);

    // One core var: fuse the core parts (innermost first), never a serial loop.
    const std::vector<std::string> now = loops_of(f.function().definition().schedule());
    const std::string core_name = fresh(now, "core");
    if (cores.size() == 1) {
        out.core = Var(core_name);
        f.rename(cores[0].var, out.core);
    } else {
        Var fused = cores[0].var;
        for (size_t i = 1; i < cores.size(); i++) {
            Var next(i + 1 == cores.size() ? core_name : fresh(now, core_name + "_" + std::to_string(i)));
            f.fuse(fused, cores[i].var, next);
            fused = next;
        }
        out.core = fused;
    }
    f.parallel(out.core);
    return out;
}

RowTileLoops split_row_tiles_across_cores(Func out, const Var &x, const Var &y, int rows_padded, int cores,
                                          int tile_rows, int lanes) {
    const std::string what = describe("split_row_tiles_across_cores", out);
    if (cores < 1 || tile_rows < 1 || rows_padded % ((int64_t)cores * tile_rows) != 0) {
        fail(what, "rows_padded (" + std::to_string(rows_padded) + ") must be a multiple of cores (" +
                       std::to_string(cores) + ") x tile_rows (" + std::to_string(tile_rows) + ")");
    }
    RowTileLoops loops;
    Var yr("yr");
    out.split(y, loops.core, yr, rows_padded / cores, TailStrategy::RoundUp)
        .split(yr, loops.yo, loops.yi, tile_rows, TailStrategy::RoundUp)
        .parallel(loops.core)
        .vectorize(x, lanes, TailStrategy::RoundUp);
    return loops;
}

// ---- device layouts -----------------------------------------------------

StickLayout default_stick_layout(int rank) {
    StickLayout l;
    l.stick_dim = 0;
    for (int d = rank - 1; d >= 0; d--) l.order.push_back(d);
    return l;
}

void set_device_layout(const std::string &tensor_name, const StickLayout &layout) {
    const std::string what = "set_device_layout(tensor '" + tensor_name + "')";
    const std::optional<SpyreTensorInfo> info = ScheduleContext::active().tensor(tensor_name);
    if (!info) fail(what, "the tensor has no static shape yet; declare it with spyre::constrain_tensor first");
    const int rank = (int)info->extents.size();
    StickLayout l = layout;
    if (l.order.empty()) l.order = default_stick_layout(rank).order;
    if (l.stick_dim < 0 || l.stick_dim >= rank) {
        fail(what, "stick dimension " + std::to_string(l.stick_dim) + " is out of range for a " + std::to_string(rank) +
                       "-D tensor");
    }
    std::vector<int> sorted = l.order;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = (int)sorted.size() == rank;
    for (int d = 0; permutation && d < rank; d++) permutation = sorted[d] == d;
    if (!permutation) {
        fail(what, "the order " + layout_string(l).substr(layout_string(l).find("order=") + 6) +
                       " is not a permutation of the tensor's " + std::to_string(rank) + " dimensions");
    }
    if (l.stick_dim != info->stick_dim) {
        fail(what, "the layout " + layout_string(l) + " puts the sticks along dimension " + std::to_string(l.stick_dim) +
                       " but the tensor was declared with sticks along dimension " + std::to_string(info->stick_dim) +
                       " (which decides its padding); pass stick_dim=" + std::to_string(l.stick_dim) +
                       " to spyre::constrain_tensor");
    }
    ScheduleContext::active().set_tensor_order(tensor_name, l.order);
}

std::optional<StickLayout> recorded_device_layout(const std::string &tensor_name) {
    const std::optional<SpyreTensorInfo> info = ScheduleContext::active().tensor(tensor_name);
    if (!info || info->order.empty()) return std::nullopt;
    return StickLayout{info->stick_dim, info->order};
}

// ---- PT -----------------------------------------------------------------

namespace {
// The first factor of each side of `a + b` that is a product (a Mul or a widening_mul), its
// widening cast stripped, in the order a, b.
std::vector<Expr> product_factors(const Expr &a, const Expr &b) {
    std::vector<Expr> out;
    for (const Expr &e : {a, b}) {
        Expr factor;
        if (const Internal::Mul *mul = e.as<Internal::Mul>()) factor = mul->a;
        const Internal::Call *c = e.as<Internal::Call>();
        if (c && c->is_intrinsic(Internal::Call::widening_mul)) factor = c->args[0];
        if (!factor.defined()) continue;
        if (const Internal::Cast *cast = factor.as<Internal::Cast>()) factor = cast->value;
        out.push_back(factor);
    }
    return out;
}

// Stick lanes of the matmul operands of `a + b` (the product's side), or 0 when they cannot be told.
int operand_stick_lanes(const Expr &a, const Expr &b) {
    for (const Expr &factor : product_factors(a, b)) {
        if (has_sticks(factor.type())) return stick_lanes(factor.type());
    }
    return 0;
}

// The type of the factors of the product side of `a + b`, or Handle() when neither side is a product.
Type product_operand_type(const Expr &a, const Expr &b) {
    const std::vector<Expr> factors = product_factors(a, b);
    return factors.empty() ? Handle() : factors.front().type().element_of();
}
}  // namespace

PtMatmul matmul_on_pt(Func acc, RVar k, Var n, Var m, int k_chunk) {
    const std::string what =
        describe("matmul_on_pt", acc, "k " + quoted(k.name()) + ", n " + quoted(n.name()) + ", m " + quoted(m.name()));
    require_defined(what, acc);
    // The PT accumulates float16/float32 operands in float32 and int8 operands in int32.
    const bool int_acc = acc.outputs() == 1 && acc.output_types()[0] == Int(32);
    if (acc.outputs() != 1 || (acc.output_types()[0] != Float(32) && !int_acc)) {
        std::ostringstream os;
        os << "the PT accumulates in float32 (float16 or float32 operands) or int32 (int8 operands), but the "
              "accumulator has type ";
        if (acc.outputs() == 1) os << acc.output_types()[0]; else os << "Tuple";
        os << "; accumulate in float32 (or, for int8 operands, int32) in the algorithm and cast afterwards";
        fail(what, os.str());
    }
    if (!acc.has_update_definition()) {
        fail(what, "it has no update definition; the PT pattern is acc(n, m) += A(k, m) * B(n, k)");
    }
    // The update must be acc(...) = acc(...) + <product>.
    const Expr value = acc.update_value(0);
    const Internal::Add *add = value.as<Internal::Add>();
    if (!int_acc && add && product_operand_type(add->a, add->b) == Int(8)) {
        fail(what, "the product's operands are int8, which the PT multiplies into an int32 accumulator only, and "
                   "this accumulator is float32; accumulate in int32 (acc(n, m) = i32(...); acc(n, m) += "
                   "i32(A(k, m)) * i32(B(n, k))) and convert the int32 result to float in the Func that reads it");
    }
    if (int_acc && add) {
        const Type operands = product_operand_type(add->a, add->b);
        if (operands != Handle() && operands != Int(8)) {
            std::ostringstream os;
            os << "an int32 accumulator is the PT's int8 path (acc(n, m) += i32(A(k, m)) * i32(B(n, k)) with int8 A "
                  "and B), but the product's operands are "
               << operands
               << "; the PT multiplies int8 (into int32), float16 and float32 (into float32): make A and B int8, or "
                  "accumulate float operands in float32";
            fail(what, os.str());
        }
    }
    auto self_call = [&](const Expr &e) {
        const Internal::Call *c = e.as<Internal::Call>();
        return c && c->call_type == Internal::Call::Halide && c->name == acc.name();
    };
    auto product = [](const Expr &e) {
        const Internal::Call *c = e.as<Internal::Call>();
        return e.as<Internal::Mul>() || (c && c->is_intrinsic(Internal::Call::widening_mul));
    };
    if (!add || !((self_call(add->a) && product(add->b)) || (self_call(add->b) && product(add->a)))) {
        fail(what, "its first update is not acc(n, m) += A(k, m) * B(n, k) (a sum of products into itself), "
                   "the pattern the PT recognizer compiles");
    }
    std::vector<std::string> pure;
    for (const Var &a : acc.args()) pure.push_back(a.name());
    for (const Var &v : {n, m}) {
        if (!contains(pure, v.name())) {
            fail(what, quoted(v.name()) + " is not a pure var of the accumulator (its vars: " + list(pure) + ")");
        }
    }
    if (n.name() == m.name()) fail(what, "n and m must be different vars");
    const Internal::StageSchedule &us = acc.function().update(0).schedule();
    bool k_is_rvar = false;
    for (const Internal::Dim &d : us.dims()) {
        if (unqualified(d.var) == k.name() && d.is_rvar()) k_is_rvar = true;
    }
    if (!k_is_rvar) {
        std::vector<std::string> rvars;
        for (const Internal::Dim &d : us.dims()) {
            if (d.is_rvar()) rvars.push_back(unqualified(d.var));
        }
        fail(what, quoted(k.name()) + " is not a reduction loop of the update (its reduction loops: " + list(rvars) + ")");
    }
    for (const Var &v : {n, m}) {
        if (!contains(loops_of(us), v.name())) {
            fail(what, quoted(v.name()) + " is no longer a loop of the update; call matmul_on_pt before splitting it");
        }
    }

    PtMatmul out;
    Stage update = acc.update(0);
    const int acc_lanes = stick_lanes(acc.output_types()[0]);
    const int64_t *k_extent = Internal::as_const_int(k.extent());
    if (k_chunk < 0) fail(what, "k_chunk " + std::to_string(k_chunk) + " is negative");
    if (k_chunk > 0 && k_extent && *k_extent == k_chunk) {
        fail(what, "k_chunk " + std::to_string(k_chunk) + " equals the reduction extent, so there is one chunk, which is "
                   "the unchunked matmul: pt.k_outer would be the reduction loop itself, where no operand can be staged; "
                   "pass k_chunk = 0 and stage the operands at the consumer's tile loop, or a k_chunk smaller than " +
                       std::to_string(k_chunk) + " that divides it");
    }
    if (k_chunk > 0) {
        if (!k_extent) fail(what, "K chunks need a constant reduction extent, and " + quoted(k.name()) + "'s is not");
        if (*k_extent % k_chunk != 0) {
            fail(what, "k_chunk " + std::to_string(k_chunk) + " does not divide the reduction extent " +
                           std::to_string(*k_extent) + " (RVars cannot be rounded up)");
        }
        const int in_lanes = operand_stick_lanes(add->a, add->b);
        if (in_lanes > 0 && k_chunk % in_lanes != 0) {
            std::ostringstream os;
            os << "k_chunk " << k_chunk << " is not a whole number of sticks (" << k_chunk << " / " << in_lanes
               << " = " << (double)k_chunk / in_lanes << "; a stick of the operands is " << in_lanes
               << " elements): every K chunk of A(k, m) starts at a multiple of k_chunk along A's stick dimension, "
                  "and DMA moves whole sticks; use a multiple of "
               << in_lanes << " that divides " << *k_extent;
            int suggestion = 0;
            for (int c = in_lanes; c < *k_extent; c += in_lanes) {
                if (*k_extent % c == 0 && c <= k_chunk) suggestion = c;
            }
            if (suggestion > 0) os << ", e.g. " << suggestion;
            fail(what, os.str());
        }
        const std::vector<std::string> loops = loops_of(us);
        out.k_outer = RVar(fresh(loops, "ko"));
        out.k_inner = RVar(fresh(loops, "ki"));
        out.k_chunked = true;
        update.split(k, out.k_outer, out.k_inner, k_chunk).reorder(n, m, out.k_inner, out.k_outer);
    } else {
        out.k_outer = k;
        out.k_inner = k;
        update.reorder(n, m, k);
    }
    update.vectorize(n, acc_lanes);
    return out;
}

// ---- double buffering ---------------------------------------------------

void double_buffer(Func f, Func consumer, const VarOrRVar &at) {
    stage_in_scratchpad(f, consumer, at);
    ScheduleContext::active().request_double_buffering(f.name());
}

void double_buffer_result(Func f) {
    const std::string what = describe("double_buffer_result", f);
    if (f.function().schedule().memory_type() != MemoryType::VTCM) {
        fail(what, "it is not in the scratchpad; schedule it with store_in(MemoryType::VTCM) and compute_at first");
    }
    ScheduleContext::active().request_double_buffering(f.name());
}

void compute_one_iteration_ahead(Func f, bool second_copy) {
    const std::string what = describe("compute_one_iteration_ahead", f);
    if (f.function().schedule().memory_type() != MemoryType::VTCM) {
        fail(what, "it is not in the scratchpad; schedule it with store_in(MemoryType::VTCM) and compute_at first");
    }
    ScheduleContext::active().request_computing_ahead(f.name(), second_copy);
}

void stage_in_scratchpad(Func f, Func consumer, const VarOrRVar &at, bool double_buffered) {
    stage_in_scratchpad(f, consumer, at, double_buffered, 1);
}

void stage_in_scratchpad(Func f, Func consumer, const VarOrRVar &at, bool double_buffered, int sticks_per_vector) {
    stage_with_vectors(f, consumer, at, sticks_per_vector);
    if (double_buffered) ScheduleContext::active().request_double_buffering(f.name());
}

// ---- ring ---------------------------------------------------------------

void share_over_ring(Func f, RingForwarding forwarding) {
    const std::string what = describe("share_over_ring", f);
    if (f.function().schedule().memory_type() != MemoryType::VTCM) {
        fail(what, "it is not staged in the scratchpad; call stage_in_scratchpad or double_buffer on it first");
    }
    if (f.has_update_definition()) {
        fail(what, "it has update definitions (an accumulator); only a staged copy of an input can be shared");
    }
    ScheduleContext::active().request_ring_sharing(f.name(), forwarding == RingForwarding::Pieces,
                                                   forwarding == RingForwarding::Gathered);
}

}  // namespace spyre
