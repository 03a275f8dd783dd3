// Instruction selection for one core (see instruction_selection.h).
#include "instruction_selection.h"

#include <cctype>
#include <cstring>
#include <sstream>

#include "index_evaluation.h"
#include "scratchpad_plan.h"
#include "spyre_types.h"
#include "spyre_lowering.h"

namespace spyre {
namespace compiler {

using namespace Halide;
using namespace Halide::Internal;
namespace fld = isa::field;

namespace {

std::string to_text(const Expr &e) {
    std::ostringstream os;
    os << e;
    std::string s = os.str();
    if (s.size() > 160) s = s.substr(0, 157) + "...";
    return s;
}

std::string to_text(const Stmt &s) {
    std::ostringstream os;
    os << s;
    std::string t = os.str();
    auto nl = t.find('\n');
    if (nl != std::string::npos) t = t.substr(0, nl);
    if (t.size() > 160) t = t.substr(0, 157) + "...";
    return t;
}

SymOperand constant(int64_t v) {
    SymOperand s;
    s.base = v;
    return s;
}

SymOperand scaled(const SymOperand &a, int64_t k, int64_t offset) {
    SymOperand s;
    s.base = a.base * k + offset;
    s.coef = a.coef;
    for (auto &c : s.coef) c *= k;
    return s;
}

// An SFU source operand.
struct SfuSource {
    int mode = 0;  // 0 vector, 1 scalar per row, 2 immediate, 3 parameter
    SymOperand addr;
    uint32_t imm = 0;
};

struct BufferInfo {
    int64_t address = 0;
    Type type;
};

class CoreSelector {
public:
    CoreSelector(const std::string &core_var, int core, const MachineDescription &m, KernelInterface &iface)
        : m_(m), iface_(iface), plan_(m.stick_bytes) {
        if (!core_var.empty()) env_.bind_constant(core_var, core);
        core_loop_ = core_var;
    }

    CoreProgram run(const Stmt &body) {
        CoreProgram out;
        walk(body, out.tree);
        out.scratchpad_peak = plan_.peak_bytes();
        out.pingpong = pingpong_;
        out.scratchpad_peak_description = plan_.describe_peak();
        return out;
    }

private:
    // ---------------------------------------------------------------- errors
    // Halide makes Func names unique per process (stage$2); users wrote "stage".
    static std::string display(const std::string &name) {
        std::string out;
        for (size_t i = 0; i < name.size(); i++) {
            if (name[i] == '$' && i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) {
                while (i + 1 < name.size() && std::isdigit((unsigned char)name[i + 1])) i++;
                continue;
            }
            out += name[i];
        }
        return out;
    }

    [[noreturn]] void fail(const std::string &rule) const {
        std::ostringstream os;
        os << "Spyre: in Func '" << (func_.empty() ? "?" : display(func_)) << "'";
        if (!env_.loop_names().empty()) os << ", loop '" << display(env_.loop_names().back()) << "'";
        else os << ", loop '" << display(core_loop_) << "'";
        os << ": " << rule;
        throw CompileError(display(os.str()));
    }

    // ------------------------------------------------------------- statements
    void walk(const Stmt &s, std::vector<ProgramNode> &out) {
        try {
            walk_statement(s, out);
        } catch (const CompileError &e) {
            if (std::string(e.what()).rfind("Spyre:", 0) == 0) throw;
            fail(e.what());  // add the Func and loop to errors from index evaluation
        }
    }

    void walk_statement(const Stmt &s, std::vector<ProgramNode> &out) {
        if (!s.defined()) return;
        if (const For *op = s.as<For>()) return visit_for(op, out);
        if (const LetStmt *op = s.as<LetStmt>()) {
            if (record_copy_destination(op) || select_buffer_copy(op->value, out)) {
                walk(op->body, out);
                return;
            }
            if (op->value.type().is_vector() || op->value.type().is_float()) return walk_value_let(op, out);
            env_.push_let(op->name, op->value);
            walk(op->body, out);
            env_.pop_let(op->name);
            return;
        }
        if (const Block *op = s.as<Block>()) {
            walk(op->first, out);
            walk(op->rest, out);
            return;
        }
        if (const ProducerConsumer *op = s.as<ProducerConsumer>()) {
            std::string saved = func_;
            if (op->is_producer) func_ = op->name;
            walk(op->body, out);
            func_ = saved;
            return;
        }
        if (const Allocate *op = s.as<Allocate>()) return visit_allocate(op, out);
        if (const Free *op = s.as<Free>()) {
            if (!held(op->name)) plan_.release(op->name);
            return;
        }
        if (const Store *op = s.as<Store>()) return visit_store(op, out);
        if (s.as<AssertStmt>()) return;  // static checks inside the region are proven by construction
        if (const Evaluate *op = s.as<Evaluate>()) {
            if (is_const(op->value) || select_buffer_copy(op->value, out)) return;
            const Call *c = op->value.as<Call>();
            fail("the call " + (c ? c->name : to_text(op->value)) +
                 " is not supported in the device region (only copies, matmul-shaped reductions and vector arithmetic "
                 "over scratchpad are)");
        }
        if (s.as<IfThenElse>()) {
            fail("a condition (IfThenElse) in the device region is not supported: the loops must be static. Ragged "
                 "tails come from splits that do not divide: pad the tensors with spyre::constrain_tensor multiples "
                 "and use TailStrategy::RoundUp");
        }
        if (s.as<Fork>() || s.as<Acquire>()) fail("async() stages (Fork/Acquire) are not supported by this backend yet");
        if (s.as<Atomic>()) fail("atomic() updates are not supported on Spyre");
        if (s.as<Prefetch>()) fail("prefetch() is not supported on Spyre; stage the data in scratchpad instead");
        fail("unsupported IR node in the device region: " + to_text(s));
    }

    // A vector (or float) value bound by a LetStmt (Halide's CSE hoists values used
    // twice): computed once into a scratchpad buffer that lives for the let's body.
    void walk_value_let(const LetStmt *op, std::vector<ProgramNode> &out) {
        const Type t = op->value.type();
        const int lanes = t.lanes();
        temps_.clear();
        SfuSource v = operand(op->value, lanes, out);
        const std::string name = "let." + op->name + "." + std::to_string(temp_counter_++);
        SymOperand addr = constant(plan_.allocate(name, (int64_t)lanes * std::max(t.bytes(), 4)));
        emit_sfu(out, isa::Opcode::Copy, addr, {v}, lanes, t);
        for (const std::string &tname : temps_) plan_.release(tname);
        temps_.clear();
        SfuSource bound;
        bound.mode = lanes == 1 ? 1 : 0;
        bound.addr = addr;
        vector_lets_[op->name].push_back(bound);
        walk(op->body, out);
        vector_lets_[op->name].pop_back();
        plan_.release(name);
    }

    void visit_for(const For *op, std::vector<ProgramNode> &out) {
        if (op->for_type == ForType::Parallel) {
            fail("loop '" + op->name + "' is parallel inside the core split; only one loop may be split across cores");
        }
        if (op->for_type != ForType::Serial) {
            fail("loop '" + op->name + "' has a for-type the Spyre backend does not support (only serial loops run on a core)");
        }
        if (env_.depends_on_loops(op->extent) || env_.depends_on_loops(op->min)) {
            fail("loop '" + op->name + "' has a min or extent that changes between iterations of an enclosing loop; "
                 "extents must be compile-time constants");
        }
        int64_t trip = 0, min = 0;
        try {
            trip = env_.evaluate(op->extent, {});
            min = env_.evaluate(op->min, {});
        } catch (const CompileError &e) {
            fail("loop '" + op->name + "' has extent " + to_text(op->extent) +
                 ", which is not a compile-time constant; extents must be compile-time constants (" + e.what() + ")");
        }
        if (trip <= 0) return;
        if (trip == 1) {
            env_.bind_constant(op->name, min);
            walk(op->body, out);
            return;
        }
        if (try_matmul(op, out)) return;
        if (try_row_reduction(op, min, trip, out)) return;
        if (trip > m_.max_loop_trip_count) {
            fail("loop '" + op->name + "' has " + std::to_string(trip) + " iterations, more than a hardware loop's " +
                 std::to_string(m_.max_loop_trip_count) + "; split it");
        }
        ProgramNode loop = ProgramNode::loop(trip, op->name);
        loop.loop_id = next_loop_id_++;
        const int level = env_.loop_depth();
        env_.bind_loop(op->name, level, min, trip);
        loop_ids_.push_back(loop.loop_id);
        walk(op->body, loop.body);
        loop_ids_.pop_back();
        env_.unbind_loop(op->name);
        for (const std::string &name : held_until_loop_end_[level]) plan_.release(name);
        held_until_loop_end_.erase(level);
        if (!loop.body.empty()) out.push_back(std::move(loop));
    }

    void visit_allocate(const Allocate *op, std::vector<ProgramNode> &out) {
        if (op->memory_type != MemoryType::VTCM) {
            std::ostringstream mt;
            mt << op->memory_type;
            std::string saved = func_;
            func_ = op->name;
            fail("it is stored in memory type " + mt.str() +
                 " inside the device region; compute units only reach their own scratchpad: schedule it with "
                 ".store_in(MemoryType::VTCM)");
        }
        int64_t elems = 1;
        for (const Expr &e : op->extents) {
            if (env_.depends_on_loops(e)) fail("the scratchpad buffer '" + op->name + "' has a size that depends on a loop");
            elems *= env_.evaluate(e, {});
        }
        DType dt;
        if (!spyre_dtype(op->type, &dt)) {
            fail("the scratchpad buffer '" + op->name + "' has element type " + type_text(op->type) +
                 ", which Spyre does not support (float32, float16, int32, int8)");
        }
        BufferInfo b;
        b.type = op->type;
        const int64_t bytes = elems * op->type.bytes();
        if (double_buffer_requested(op->name) && env_.loop_depth() > 0) {
            // Two copies; apply_double_buffering alternates between them.
            // Fresh memory, held until the staging loop ends: the copies are renamed by
            // address, so no other buffer of the loop body may share these bytes.
            const int64_t copy = (bytes + m_.stick_bytes - 1) / m_.stick_bytes * m_.stick_bytes;
            b.address = plan_.allocate_above_peak(op->name, 2 * copy);
            PingPongBuffer pp;
            pp.name = op->name;
            pp.level = env_.loop_depth() - 1;
            pp.loop_id = loop_ids_.back();
            pp.lo = b.address;
            pp.hi = b.address + copy;
            pp.offset = copy;
            pingpong_.push_back(pp);
            held_until_loop_end_[env_.loop_depth() - 1].push_back(op->name);
        } else {
            b.address = plan_.allocate(op->name, bytes);
        }
        buffers_[op->name].push_back(b);
        walk(op->body, out);
        if (plan_.is_live(op->name) && !held(op->name)) plan_.release(op->name);
        buffers_[op->name].pop_back();
        if (buffers_[op->name].empty()) buffers_.erase(op->name);
    }

    // Requested by Func name; lowering may add a "$N" suffix (input wrappers get "$0").
    bool double_buffer_requested(const std::string &allocation) const {
        if (iface_.double_buffered.count(allocation)) return true;
        const size_t dollar = allocation.rfind('$');
        if (dollar == std::string::npos || dollar + 1 == allocation.size()) return false;
        for (size_t i = dollar + 1; i < allocation.size(); i++) {
            if (!std::isdigit((unsigned char)allocation[i])) return false;
        }
        return iface_.double_buffered.count(allocation.substr(0, dollar)) != 0;
    }

    static std::string type_text(const Type &t) {
        std::ostringstream os;
        os << t;
        return os.str();
    }

    const BufferInfo *scratchpad_buffer(const std::string &name) const {
        auto it = buffers_.find(name);
        return it == buffers_.end() ? nullptr : &it->second.back();
    }
    const KernelTensor *dram_tensor(const std::string &name) const {
        auto it = iface_.tensors.find(name);
        return it == iface_.tensors.end() ? nullptr : &it->second;
    }

    // Dense vector index ramp(base, 1, lanes): the affine base, or a compile error.
    SymOperand dense_base(const Expr &index, const std::string &buffer, int lanes) {
        const Ramp *r = index.as<Ramp>();
        if (!r || !is_const_one(r->stride) || r->lanes != lanes) {
            fail("the access to '" + buffer + "' at " + to_text(index) +
                 " is not a dense vector; vectorize the stick dimension (dimension 0) so each vector is whole sticks");
        }
        auto a = env_.affine_in_loops(r->base);
        if (!a) {
            fail("the index of '" + buffer + "' (" + to_text(r->base) +
                 ") is not affine in the loops inside the core; fused or div/mod serial loops cannot become hardware "
                 "loops: split and reorder instead of fusing inside a core");
        }
        return *a;
    }

    void check_whole_sticks(const Type &t, const std::string &buffer) {
        const int64_t bytes = (int64_t)t.lanes() * t.bytes();
        if (t.lanes() == 1) {
            fail("scalar store to '" + buffer + "'; vectorize the innermost dimension by the stick width (" +
                 std::to_string(m_.stick_bytes / t.bytes()) + " lanes of " + type_text(t.element_of()) + ")");
        }
        if (bytes % m_.stick_bytes != 0) {
            fail("vectors that are not whole sticks: '" + buffer + "' is stored " + std::to_string(t.lanes()) +
                 " lanes of " + type_text(t.element_of()) + " (" + std::to_string(bytes) + " bytes); vectorize by a multiple of " +
                 std::to_string(m_.stick_bytes / t.bytes()) + " lanes (" + std::to_string(m_.stick_bytes) + "-byte sticks)");
        }
    }

    void check_stick_aligned(const SymOperand &bytes_offset, const std::string &what) {
        bool ok = bytes_offset.base % m_.stick_bytes == 0;
        for (int64_t c : bytes_offset.coef) ok = ok && c % m_.stick_bytes == 0;
        if (!ok) {
            fail("DMA of '" + what + "' is not aligned to whole sticks (offset " + std::to_string(bytes_offset.base) +
                 " bytes); tiles along the stick dimension must start on stick boundaries");
        }
    }

    void emit(std::vector<ProgramNode> &out, isa::Opcode op, std::initializer_list<SymOperand> fields) {
        SymInstruction inst;
        inst.op = op;
        int i = 0;
        for (const SymOperand &f : fields) inst.f[i++] = f;
        if (i != isa::opcode_spec(op).num_fields) throw CompileError("internal: wrong field count for " + std::string(isa::opcode_spec(op).mnemonic));
        inst.func = func_;
        out.push_back(ProgramNode::instruction(inst));
    }

    // The device byte offset of the element at flat (padded, host-order) index
    // `flat`, affine in the loops. The default layout is the padded dense array
    // (offset = flat x element size); another dimension order is mapped
    // dimension by dimension: the index and each loop's step are unflattened
    // into coordinates, which must stay inside the padded box at every corner
    // of the loop box (so the mapping is exact), then re-flattened with the
    // layout's strides. Vectors start on stick boundaries (checked by the caller).
    SymOperand dram_address(const KernelTensor &t, const SymOperand &flat, const std::string &what) {
        const int64_t eb = t.type.bytes();
        const int rank = (int)t.padded.size();
        std::vector<int> host_order;
        for (int d = rank - 1; d >= 0; d--) host_order.push_back(d);
        if (t.layout.order.empty() || t.layout.order == host_order) return scaled(flat, eb, 0);
        TensorShape shape;
        DType dt;
        spyre_dtype(t.type, &dt);
        shape.dtype = dt;
        shape.extent = t.padded;
        const LayoutAddressing addr = layout_addressing(shape, t.layout, m_.stick_bytes);
        std::vector<int64_t> dense(rank);
        int64_t s = 1;
        for (int d = 0; d < rank; d++) {
            dense[d] = s;
            s *= t.padded[d];
        }
        auto unflatten = [&](int64_t v) {
            std::vector<int64_t> x(rank, 0);
            for (int d = rank - 1; d >= 0; d--) {
                x[d] = v / dense[d];
                v -= x[d] * dense[d];
            }
            return x;
        };
        const std::vector<int64_t> x0 = unflatten(flat.base);
        std::vector<std::vector<int64_t>> step;
        for (size_t i = 0; i < flat.coef.size(); i++) step.push_back(unflatten(flat.coef[i]));
        const std::vector<int64_t> &trips = env_.loop_trips();
        for (uint64_t mask = 0; mask < (1ull << std::min<size_t>(flat.coef.size(), 16)); mask++) {
            for (int d = 0; d < rank; d++) {
                int64_t x = x0[d];
                for (size_t i = 0; i < flat.coef.size() && i < 16; i++) {
                    if (mask >> i & 1) x += step[i][d] * (trips[i] - 1);
                }
                if (x < 0 || x >= t.padded[d]) {
                    fail("the access to '" + what + "' cannot be mapped to its device layout " +
                         layout_to_string(t.layout) + ": a loop moves it across dimensions of the tensor");
                }
            }
        }
        const int64_t lanes = addr.lanes;
        auto offset = [&](const std::vector<int64_t> &x) {
            int64_t o = 0;
            for (int d = 0; d < rank; d++) o += d == t.layout.stick_dim ? x[d] / lanes * addr.stride_bytes[d] : x[d] * addr.stride_bytes[d];
            return o;
        };
        if (x0[t.layout.stick_dim] % lanes != 0) fail("the access to '" + what + "' does not start on a stick boundary");
        SymOperand out;
        out.base = offset(x0);
        for (size_t i = 0; i < step.size(); i++) {
            if (step[i][t.layout.stick_dim] % lanes != 0) {
                fail("the access to '" + what + "' moves by part of a stick along the stick dimension");
            }
            out.set_coef(i, offset(step[i]));
        }
        return out;
    }

    void visit_store(const Store *op, std::vector<ProgramNode> &out) {
        const Type t = op->value.type();
        const BufferInfo *sp_dst = scratchpad_buffer(op->name);
        const KernelTensor *dram_dst = dram_tensor(op->name);
        if (!sp_dst && !dram_dst) fail("store to '" + op->name + "', which is neither a kernel argument nor in scratchpad");
        if (!is_const_one(op->predicate)) fail("predicated store to '" + op->name + "' is not supported");
        const int lanes = t.lanes();
        const int64_t eb = t.bytes();
        if (lanes == 1 && sp_dst) {
            // A scalar in scratchpad (a reduction's result, a per-row statistic): an SFU op on one
            // element; loop folding turns the loop around it into rows.
            auto a = env_.affine_in_loops(op->index);
            if (!a) fail("the index of '" + op->name + "' (" + to_text(op->index) + ") is not affine in the core's loops");
            temps_.clear();
            compile_into(op->value, scaled(*a, eb, sp_dst->address), out);
            for (const std::string &tname : temps_) plan_.release(tname);
            temps_.clear();
            return;
        }
        check_whole_sticks(t, op->name);
        SymOperand dst = dense_base(op->index, op->name, lanes);

        if (dram_dst) {
            const Load *ld = op->value.as<Load>();
            const BufferInfo *src = ld ? scratchpad_buffer(ld->name) : nullptr;
            if (!src) {
                fail("the output '" + op->name + "' is computed while being stored to DRAM (" + to_text(op->value) +
                     "); compute it into a scratchpad Func (store_in(MemoryType::VTCM)) and copy that");
            }
            SymOperand sp = scaled(dense_base(ld->index, ld->name, lanes), eb, src->address);
            SymOperand dram = dram_address(*dram_dst, dst, op->name);
            check_stick_aligned(dram, op->name);
            check_stick_aligned(sp, ld->name);
            const int64_t row = lanes * eb;
            emit(out, isa::Opcode::DmaStore,
                 {constant(dram_dst->arg_index), dram, sp, constant(row), constant(1), constant(row), constant(row),
                  constant(1), constant(0), constant(0)});
            return;
        }
        // Destination in scratchpad.
        if (const Load *ld = op->value.as<Load>()) {
            if (const KernelTensor *src = dram_tensor(ld->name)) {
                SymOperand dram = dram_address(*src, dense_base(ld->index, ld->name, lanes), ld->name);
                SymOperand sp = scaled(dst, eb, sp_dst->address);
                check_stick_aligned(dram, ld->name);
                check_stick_aligned(sp, op->name);
                const int64_t row = lanes * eb;
                emit(out, isa::Opcode::DmaLoad,
                     {constant(src->arg_index), dram, sp, constant(row), constant(row), constant(1), constant(row),
                      constant(row), constant(1), constant(1), constant(0), constant(0), constant(1)});
                return;
            }
        }
        temps_.clear();
        SymOperand dst_addr = scaled(dst, eb, sp_dst->address);
        compile_into(op->value, dst_addr, out);
        for (const std::string &tname : temps_) plan_.release(tname);
        temps_.clear();
    }

    // ------------------------------------------------ copy_to_host() stages
    // `let W.buffer = _halide_buffer_init(alloca, make_struct(min, extent, stride, flags, ...), W, ...)`
    // describes the window of a copy stage in source coordinates; remember it.
    struct CopyWindow {
        std::string allocation;
        std::vector<Expr> dims;  // 4 per dimension: min, extent, stride (in W), flags
    };
    std::map<std::string, CopyWindow> copy_windows_;

    bool record_copy_destination(const LetStmt *op) {
        const std::string suffix = ".buffer";
        if (op->name.size() <= suffix.size() || op->name.compare(op->name.size() - suffix.size(), suffix.size(), suffix) != 0) {
            return false;
        }
        std::map<std::string, Expr> local;
        Expr v = op->value;
        while (const Let *l = v.as<Let>()) {
            local[l->name] = l->value;
            v = l->body;
        }
        const Call *init = v.as<Call>();
        if (!init || init->name != "_halide_buffer_init" || init->args.size() < 3) return false;
        Expr dims = init->args[1];
        if (const Variable *dv = dims.as<Variable>()) {
            auto it = local.find(dv->name);
            if (it != local.end()) dims = it->second;
        }
        const Call *ms = dims.as<Call>();
        const Variable *host = init->args[2].as<Variable>();
        if (!ms || !ms->is_intrinsic(Call::make_struct) || !host || !scratchpad_buffer(host->name)) return false;
        CopyWindow w;
        w.allocation = host->name;
        w.dims = ms->args;
        copy_windows_[op->name] = w;
        return true;
    }

    // `halide_buffer_copy(src.buffer, null, W.buffer)` from a kernel input into a scratchpad window: one DMA load.
    bool select_buffer_copy(const Expr &value, std::vector<ProgramNode> &out) {
        const Call *c = value.as<Call>();
        if (!c || c->name != "halide_buffer_copy" || c->args.size() != 3) return false;
        const Variable *src = c->args[0].as<Variable>();
        const Variable *dst = c->args[2].as<Variable>();
        if (!src || !dst) fail("halide_buffer_copy with computed buffer arguments is not supported");
        const std::string src_name = src->name.substr(0, src->name.size() - std::string(".buffer").size());
        const KernelTensor *t = dram_tensor(src_name);
        auto w = copy_windows_.find(dst->name);
        if (!t || w == copy_windows_.end()) {
            fail("copy_to_host() stage from '" + src->name + "' to '" + dst->name +
                 "': only copies from a kernel input into a scratchpad buffer become DMA");
        }
        const BufferInfo *b = scratchpad_buffer(w->second.allocation);
        const int64_t eb = t->type.bytes();
        const size_t rank = w->second.dims.size() / 4;
        SymOperand dram = constant(0);
        std::vector<int64_t> extent, local_stride, src_stride;
        int64_t stride = 1;
        for (size_t d = 0; d < rank; d++) {
            auto min = env_.affine_in_loops(w->second.dims[4 * d]);
            if (!min) fail("the window of the copy into '" + w->second.allocation + "' is not affine in the core's loops");
            const int64_t e = env_.evaluate(w->second.dims[4 * d + 1], {});
            const int64_t ls = env_.evaluate(w->second.dims[4 * d + 2], {});
            for (size_t i = 0; i < min->coef.size(); i++) dram.set_coef(i, dram.coef_at(i) + min->coef[i] * stride * eb);
            dram.base += min->base * stride * eb;
            extent.push_back(e);
            local_stride.push_back(ls);
            src_stride.push_back(stride);
            stride *= d < t->padded.size() ? t->padded[d] : 1;
        }
        std::vector<int> dims;  // the dimensions that move more than one element, beyond the first
        for (size_t d = 1; d < rank; d++) {
            if (extent[d] > 1) dims.push_back((int)d);
        }
        if (dims.size() > 2) fail("copy_to_host() stage into '" + w->second.allocation + "' moves more than 3 dimensions");
        if (rank == 0 || local_stride[0] != 1) fail("copy_to_host() stage into '" + w->second.allocation + "' is not dense in dimension 0");
        const int64_t row = extent[0] * eb;
        if (row % m_.stick_bytes != 0) {
            fail("vectors that are not whole sticks: the copy into '" + w->second.allocation + "' moves rows of " +
                 std::to_string(row) + " bytes; tile dimension 0 by whole sticks");
        }
        check_stick_aligned(dram, src_name);
        int64_t rows = 1, drs = row, srs = row, planes = 1, dps = 0, sps = 0;
        if (!dims.empty()) {
            rows = extent[dims[0]];
            drs = src_stride[dims[0]] * eb;
            srs = local_stride[dims[0]] * eb;
        }
        if (dims.size() > 1) {
            planes = extent[dims[1]];
            dps = src_stride[dims[1]] * eb;
            sps = local_stride[dims[1]] * eb;
        }
        emit(out, isa::Opcode::DmaLoad,
             {constant(t->arg_index), dram, constant(b->address), constant(row), constant(row), constant(rows),
              constant(drs), constant(srs), constant(rows), constant(planes), constant(dps), constant(sps),
              constant(planes)});
        return true;
    }

    // ------------------------------------------------------- row reductions
    // `for r: acc[i] = acc[i] + src[j + r]` (or max) with a scalar accumulator whose
    // index does not move with r: one sfu.rowsum / sfu.rowmax over the row. A
    // float16 source summed into float32 is widened into a temporary row first.
    bool try_row_reduction(const For *loop, int64_t min, int64_t trip, std::vector<ProgramNode> &out) {
        std::vector<const LetStmt *> lets;
        Stmt body = loop->body;
        while (const LetStmt *l = body.as<LetStmt>()) {
            lets.push_back(l);
            body = l->body;
        }
        const Store *st = body.as<Store>();
        if (!st || st->value.type().lanes() != 1) return false;
        const BufferInfo *accb = scratchpad_buffer(st->name);
        if (!accb) return false;
        isa::Opcode op;
        Expr a, b;
        if (const Add *o = st->value.as<Add>()) op = isa::Opcode::RowSum, a = o->a, b = o->b;
        else if (const Max *o = st->value.as<Max>()) op = isa::Opcode::RowMax, a = o->a, b = o->b;
        else return false;
        const Load *self = a.as<Load>();
        Expr x = b;
        if (!self || self->name != st->name || !equal(self->index, st->index)) {
            self = b.as<Load>();
            x = a;
            if (!self || self->name != st->name || !equal(self->index, st->index)) return false;
        }
        const Type acc_t = st->value.type();
        Type src_t = acc_t;
        if (const Cast *c = x.as<Cast>()) {
            if (!(acc_t.is_float() && c->value.type().is_float())) return false;
            src_t = c->value.type();
            x = c->value;
        }
        const Load *src = x.as<Load>();
        if (!src || src->type.lanes() != 1 || !scratchpad_buffer(src->name)) return false;

        env_.bind_loop(loop->name, env_.loop_depth(), min, trip);
        for (const LetStmt *l : lets) env_.push_let(l->name, l->value);
        auto acc_i = env_.affine_in_loops(st->index);
        auto src_i = env_.affine_in_loops(src->index);
        const int level = env_.loop_depth() - 1;
        for (auto it = lets.rbegin(); it != lets.rend(); ++it) env_.pop_let((*it)->name);
        env_.unbind_loop(loop->name);
        if (!acc_i || !src_i || acc_i->coef_at(level) != 0 || src_i->coef_at(level) != 1) return false;
        auto outer = [&](SymOperand o, int64_t k, int64_t offset) {
            o = scaled(o, k, offset);
            if (o.coef.size() > (size_t)level) o.coef.resize(level);
            return o;
        };
        DType acc_dt, src_dt;
        if (!spyre_dtype(acc_t, &acc_dt) || !spyre_dtype(src_t, &src_dt)) return false;
        SymOperand dst = outer(*acc_i, acc_t.bytes(), accb->address);
        SymOperand row = outer(*src_i, src_t.bytes(), scratchpad_buffer(src->name)->address);
        if (src_dt != acc_dt) {
            temps_.clear();
            SymOperand wide = new_temp((int)trip, acc_t);
            emit(out, isa::Opcode::Cast, {wide, constant(0), constant((int)acc_dt), row, constant(0), constant(trip),
                                          constant(1), constant((int)src_dt)});
            emit(out, op, {dst, constant(0), wide, constant(0), constant(trip), constant(1), constant((int)acc_dt), constant(1)});
            for (const std::string &tname : temps_) plan_.release(tname);
            temps_.clear();
            return true;
        }
        emit(out, op, {dst, constant(0), row, constant(0), constant(trip), constant(1), constant((int)acc_dt), constant(1)});
        return true;
    }

    // ----------------------------------------------------------------- matmul
    struct MatmulOperands {
        const Load *acc = nullptr, *a = nullptr, *b = nullptr;
        Type in_type;
    };

    static Expr strip_widening_cast(const Expr &e, Type *narrow) {
        if (const Cast *c = e.as<Cast>()) {
            if (c->type.is_float() && c->type.bits() == 32 && c->value.type().is_float()) {
                *narrow = c->value.type().element_of();
                return c->value;
            }
        }
        *narrow = e.type().element_of();
        return e;
    }

    // B vector load and A broadcast scalar load, in either order.
    bool match_product(const Expr &p, const Expr &q, MatmulOperands *mm) {
        Type tp, tq;
        Expr pp = strip_widening_cast(p, &tp), qq = strip_widening_cast(q, &tq);
        if (tp != tq) return false;
        for (int swap = 0; swap < 2; swap++) {
            const Expr &vec = swap ? qq : pp;
            const Expr &sca = swap ? pp : qq;
            const Load *b = vec.as<Load>();
            const Load *a = nullptr;
            if (const Broadcast *bc = sca.as<Broadcast>()) a = bc->value.as<Load>();
            if (!a) {
                if (const Load *l = sca.as<Load>()) {
                    if (l->index.as<Broadcast>()) a = l;
                }
            }
            if (b && a && b->index.as<Ramp>() && scratchpad_buffer(a->name) && scratchpad_buffer(b->name)) {
                mm->a = a;
                mm->b = b;
                mm->in_type = tp;
                return true;
            }
        }
        return false;
    }

    bool match_matmul_store(const Store *st, MatmulOperands *mm) {
        if (!scratchpad_buffer(st->name)) return false;
        const Type t = st->value.type();
        if (!(t.is_float() && t.bits() == 32) || !st->index.as<Ramp>()) return false;
        const Add *add = st->value.as<Add>();
        if (!add) return false;
        for (int swap = 0; swap < 2; swap++) {
            const Expr &accx = swap ? add->b : add->a;
            const Expr &prod = swap ? add->a : add->b;
            const Load *acc = accx.as<Load>();
            if (!acc || acc->name != st->name || !equal(acc->index, st->index)) continue;
            bool ok = false;
            if (const Mul *mul = prod.as<Mul>()) ok = match_product(mul->a, mul->b, mm);
            if (const Call *c = prod.as<Call>()) {
                if (c->is_intrinsic(Call::widening_mul)) {
                    ok = match_product(c->args[0], c->args[1], mm);
                    if (ok) mm->in_type = c->args[0].type().element_of();
                }
            }
            if (ok) {
                mm->acc = acc;
                DType dt;
                if (!spyre_dtype(mm->in_type, &dt) || dt == DType::I32) return false;
                return true;
            }
        }
        return false;
    }

    bool try_matmul(const For *outer, std::vector<ProgramNode> &out) {
        // Peel up to three perfectly nested loops (lets allowed) down to one Store.
        std::vector<const For *> loops;
        std::vector<const LetStmt *> lets;
        Stmt s = outer;
        while (true) {
            if (const For *f = s.as<For>()) {
                if (f->for_type != ForType::Serial || loops.size() == 3) return false;
                if (env_.depends_on_loops(f->extent) || env_.depends_on_loops(f->min)) return false;
                loops.push_back(f);
                s = f->body;
            } else if (const LetStmt *l = s.as<LetStmt>()) {
                lets.push_back(l);
                s = l->body;
            } else {
                break;
            }
        }
        const Store *st = s.as<Store>();
        if (!st) return false;
        MatmulOperands mm;
        if (!match_matmul_store(st, &mm)) return false;

        // Bind the peeled loops as temporary levels to classify them by the operands they move.
        const int base_level = env_.loop_depth();
        std::vector<int64_t> trips;
        for (const For *f : loops) {
            const int64_t trip = env_.evaluate(f->extent, {});
            trips.push_back(trip);
            env_.bind_loop(f->name, env_.loop_depth(), env_.evaluate(f->min, {}), trip);
        }
        for (const LetStmt *l : lets) env_.push_let(l->name, l->value);
        auto cleanup = [&]() {
            for (auto it = lets.rbegin(); it != lets.rend(); ++it) env_.pop_let((*it)->name);
            for (auto it = loops.rbegin(); it != loops.rend(); ++it) env_.unbind_loop((*it)->name);
        };
        const int lanes = st->value.type().lanes();
        const Ramp *acc_r = mm.acc->index.as<Ramp>();
        const Ramp *b_r = mm.b->index.as<Ramp>();
        Expr a_index = mm.a->index;
        if (const Broadcast *bc = a_index.as<Broadcast>()) a_index = bc->value;
        if (!acc_r || !b_r || !is_const_one(acc_r->stride) || !is_const_one(b_r->stride) || b_r->lanes != lanes) {
            cleanup();
            return false;
        }
        auto acc_a = env_.affine_in_loops(acc_r->base);
        auto b_a = env_.affine_in_loops(b_r->base);
        auto a_a = env_.affine_in_loops(a_index);
        if (!acc_a || !b_a || !a_a) {
            cleanup();
            return false;
        }
        int m_level = -1, k_level = -1, n_level = -1;
        for (size_t j = 0; j < loops.size(); j++) {
            const int lv = base_level + (int)j;
            const bool in_acc = acc_a->coef_at(lv) != 0, in_a = a_a->coef_at(lv) != 0, in_b = b_a->coef_at(lv) != 0;
            int *slot = nullptr;
            if (in_acc && in_a && !in_b) slot = &m_level;
            else if (!in_acc && in_a && in_b) slot = &k_level;
            else if (in_acc && in_b && !in_a) slot = &n_level;
            if (!slot || *slot >= 0) {
                cleanup();
                return false;
            }
            *slot = lv;
        }
        const int64_t in_bytes = mm.in_type.bytes();
        if ((k_level >= 0 && a_a->coef_at(k_level) != 1) ||
            (n_level >= 0 && (acc_a->coef_at(n_level) != lanes || b_a->coef_at(n_level) != lanes))) {
            cleanup();
            return false;
        }
        auto trip_of = [&](int lv) { return lv < 0 ? (int64_t)1 : trips[lv - base_level]; };
        auto outer_only = [&](const SymOperand &o, int64_t k, int64_t offset) {
            SymOperand r = scaled(o, k, offset);
            if (r.coef.size() > (size_t)base_level) r.coef.resize(base_level);
            return r;
        };
        DType in_dt;
        spyre_dtype(mm.in_type, &in_dt);
        const BufferInfo *accb = scratchpad_buffer(mm.acc->name);
        const BufferInfo *ab = scratchpad_buffer(mm.a->name);
        const BufferInfo *bb = scratchpad_buffer(mm.b->name);
        SymOperand c = outer_only(*acc_a, 4, accb->address);
        SymOperand a = outer_only(*a_a, in_bytes, ab->address);
        SymOperand b = outer_only(*b_a, in_bytes, bb->address);
        const int64_t ldc = m_level >= 0 ? acc_a->coef_at(m_level) * 4 : (int64_t)lanes * 4;
        const int64_t lda = m_level >= 0 ? a_a->coef_at(m_level) * in_bytes : 0;
        const int64_t ldb = k_level >= 0 ? b_a->coef_at(k_level) * in_bytes : 0;
        const std::string saved = func_;
        cleanup();
        emit(out, isa::Opcode::Matmul,
             {c, constant(ldc), a, constant(lda), b, constant(ldb), constant(trip_of(m_level)),
              constant(lanes * trip_of(n_level)), constant(trip_of(k_level)), constant((int)in_dt), constant(1)});
        return true;
    }

    // -------------------------------------------------------------------- SFU
    SymOperand new_temp(int lanes, const Type &t) {
        const std::string name = "sfu.tmp." + std::to_string(temp_counter_++);
        temps_.push_back(name);
        return constant(plan_.allocate(name, (int64_t)lanes * std::max(t.bytes(), 4)));
    }

    uint32_t immediate_bits(const Expr &v, const Type &t) {
        if (const FloatImm *f = v.as<FloatImm>()) {
            if (!t.is_float()) fail("float constant in integer arithmetic");
            float x = (float)f->value;
            uint32_t bits;
            std::memcpy(&bits, &x, 4);
            return bits;
        }
        int64_t iv = 0;
        if (const IntImm *i = v.as<IntImm>()) iv = i->value;
        else if (const UIntImm *u = v.as<UIntImm>()) iv = (int64_t)u->value;
        if (t.is_float()) {
            float x = (float)iv;
            uint32_t bits;
            std::memcpy(&bits, &x, 4);
            return bits;
        }
        return (uint32_t)(int32_t)iv;
    }

    int param_index(const std::string &name, const Type &t, const Parameter &param) {
        for (size_t i = 0; i < iface_.scalar_params.size(); i++) {
            if (iface_.scalar_params[i] == name) return (int)i;
        }
        iface_.scalar_params.push_back(name);
        iface_.param_types[name] = t;
        iface_.param_objects[name] = param;
        return (int)iface_.scalar_params.size() - 1;
    }

    // Evaluates `e` (a vector of `lanes`) to an operand, emitting SFU instructions for inner nodes.
    SfuSource operand(const Expr &e, int lanes, std::vector<ProgramNode> &out) {
        if (const Load *ld = e.as<Load>()) {
            const BufferInfo *b = scratchpad_buffer(ld->name);
            if (!b) {
                if (dram_tensor(ld->name)) {
                    fail("compute reads the DRAM buffer '" + ld->name + "' without staging it in scratchpad: stage it, e.g. " +
                         ld->name + ".in().compute_at(...).store_in(MemoryType::VTCM)");
                }
                fail("load from '" + ld->name + "', which is not in scratchpad");
            }
            SfuSource s;
            const int64_t eb = ld->type.bytes();
            if (const Broadcast *bi = ld->index.as<Broadcast>()) {
                auto a = env_.affine_in_loops(bi->value);
                if (!a) fail("the scalar index into '" + ld->name + "' is not affine in the core's loops");
                s.mode = 1;
                s.addr = scaled(*a, eb, b->address);
            } else if (ld->type.lanes() == 1) {
                auto a = env_.affine_in_loops(ld->index);
                if (!a) fail("the scalar index into '" + ld->name + "' is not affine in the core's loops");
                s.mode = 1;
                s.addr = scaled(*a, eb, b->address);
            } else if (const Ramp *r = ld->index.as<Ramp>(); r && !is_const_one(r->stride)) {
                // A strided vector (a transpose-like access): gather it into a temporary
                // with one SFU copy of `lanes` rows of one element each.
                auto a = env_.affine_in_loops(r->base);
                if (!a || env_.depends_on_loops(r->stride)) {
                    fail("the strided access to '" + ld->name + "' is not affine in the core's loops");
                }
                const int64_t stride = env_.evaluate(r->stride, {});
                DType dt;
                if (!spyre_dtype(ld->type.element_of(), &dt)) fail("unsupported element type in '" + ld->name + "'");
                SymOperand tmp = new_temp(r->lanes, ld->type);
                emit(out, isa::Opcode::Copy,
                     {tmp, constant(eb), scaled(*a, eb, b->address), constant(stride * eb), constant(0), constant(1),
                      constant(r->lanes), constant((int)dt), constant(0)});
                s.mode = 0;
                s.addr = tmp;
            } else {
                s.mode = 0;
                s.addr = scaled(dense_base(ld->index, ld->name, ld->type.lanes()), eb, b->address);
            }
            return s;
        }
        if (const Broadcast *bc = e.as<Broadcast>()) {
            const Expr &v = bc->value;
            if (is_const(v)) {
                SfuSource s;
                s.mode = 2;
                s.imm = immediate_bits(v, e.type());
                return s;
            }
            if (const Variable *var = v.as<Variable>()) {
                if (var->param.defined()) {
                    SfuSource s;
                    s.mode = 3;
                    s.imm = (uint32_t)param_index(var->name, var->type, var->param);
                    return s;
                }
            }
            if (v.as<Load>()) return operand(v, lanes, out);
            if (const Variable *var = v.as<Variable>()) {
                auto it = vector_lets_.find(var->name);
                if (it != vector_lets_.end() && !it->second.empty()) {
                    SfuSource s = it->second.back();
                    s.mode = 1;  // one value broadcast along the row
                    return s;
                }
            }
            // A computed scalar: evaluate it as a one-lane vector into a temp, use it as a scalar operand.
            fail("broadcast of a computed scalar (" + to_text(v) + ") is not supported; compute it in a scratchpad Func");
        }
        if (const Variable *var = e.as<Variable>()) {
            auto it = vector_lets_.find(var->name);
            if (it != vector_lets_.end() && !it->second.empty()) return it->second.back();
            if (var->param.defined() && e.type().is_scalar()) {
                SfuSource s;
                s.mode = 3;
                s.imm = (uint32_t)param_index(var->name, var->type, var->param);
                return s;
            }
            fail("the vector variable '" + var->name + "' is not defined in scratchpad");
        }
        if (is_const(e)) {
            SfuSource s;
            s.mode = 2;
            s.imm = immediate_bits(e, e.type());
            return s;
        }
        SfuSource s;
        s.mode = 0;
        s.addr = new_temp(lanes, e.type());
        compile_into(e, s.addr, out);
        return s;
    }

    void emit_sfu(std::vector<ProgramNode> &out, isa::Opcode op, const SymOperand &dst, std::vector<SfuSource> src,
                  int n, const Type &t) {
        DType dt;
        if (!spyre_dtype(t.element_of(), &dt)) {
            fail("arithmetic in type " + type_text(t.element_of()) + " is not supported on Spyre (float32, float16, int32, int8)");
        }
        if ((isa::opcode_spec(op).flags & isa::FloatOnly) && !t.is_float()) {
            fail(std::string(isa::opcode_spec(op).mnemonic) + " on " + type_text(t.element_of()) + " is not supported (floats only)");
        }
        // One immediate per instruction: materialise extra immediates into temporaries.
        int imm_users = 0;
        uint32_t imm = 0;
        for (SfuSource &s : src) {
            if (s.mode < 2) continue;
            if (imm_users == 0 || (s.imm == imm && s.mode == src[0].mode)) {
                if (imm_users == 0) imm = s.imm;
                imm_users++;
                continue;
            }
            SymOperand tmp = new_temp(n, t);
            emit(out, isa::Opcode::Copy, {tmp, constant(0), constant(0), constant(0), constant(s.mode), constant(n),
                                          constant(1), constant((int)dt), constant(s.imm)});
            s.mode = 0;
            s.addr = tmp;
        }
        std::vector<SymOperand> f;
        f.push_back(dst);
        f.push_back(constant(0));
        for (const SfuSource &s : src) {
            f.push_back(s.mode < 2 ? s.addr : constant(0));
            f.push_back(constant(0));
            f.push_back(constant(s.mode));
        }
        f.push_back(constant(n));
        f.push_back(constant(1));
        f.push_back(constant((int)dt));
        f.push_back(constant(imm));
        SymInstruction inst;
        inst.op = op;
        inst.func = func_;
        if ((int)f.size() != isa::opcode_spec(op).num_fields) throw CompileError("internal: SFU field count");
        for (size_t i = 0; i < f.size(); i++) inst.f[i] = f[i];
        out.push_back(ProgramNode::instruction(inst));
    }

    void compile_into(const Expr &e, const SymOperand &dst, std::vector<ProgramNode> &out) {
        const int lanes = e.type().lanes();
        const Type t = e.type();
        auto binary = [&](isa::Opcode op, const Expr &a, const Expr &b) {
            SfuSource sa = operand(a, lanes, out);
            SfuSource sb = operand(b, lanes, out);
            emit_sfu(out, op, dst, {sa, sb}, lanes, t);
        };
        auto unary = [&](isa::Opcode op, const Expr &a) {
            SfuSource sa = operand(a, lanes, out);
            emit_sfu(out, op, dst, {sa}, lanes, t);
        };
        if (e.as<Load>() || e.as<Broadcast>() || is_const(e) || e.as<Variable>()) return unary(isa::Opcode::Copy, e);
        if (const Add *o = e.as<Add>()) return binary(isa::Opcode::Add, o->a, o->b);
        if (const Sub *o = e.as<Sub>()) return binary(isa::Opcode::Sub, o->a, o->b);
        if (const Mul *o = e.as<Mul>()) return binary(isa::Opcode::Mul, o->a, o->b);
        if (const Div *o = e.as<Div>()) {
            if (!t.is_float()) fail("integer division is not supported on the SFU");
            return binary(isa::Opcode::Div, o->a, o->b);
        }
        if (const Min *o = e.as<Min>()) return binary(isa::Opcode::Min, o->a, o->b);
        if (const Max *o = e.as<Max>()) return binary(isa::Opcode::Max, o->a, o->b);
        if (const Cast *o = e.as<Cast>()) {
            if (o->value.type().element_of() == t.element_of()) return compile_into(o->value, dst, out);
            SfuSource sa = operand(o->value, lanes, out);
            DType from, to;
            if (!spyre_dtype(o->value.type().element_of(), &from) || !spyre_dtype(t.element_of(), &to)) {
                fail("cast from " + type_text(o->value.type().element_of()) + " to " + type_text(t.element_of()) +
                     " is not supported on Spyre");
            }
            if (sa.mode != 0) {
                SymOperand tmp = new_temp(lanes, o->value.type());
                emit_sfu(out, isa::Opcode::Copy, tmp, {sa}, lanes, o->value.type());
                sa.mode = 0;
                sa.addr = tmp;
            }
            emit(out, isa::Opcode::Cast, {dst, constant(0), constant((int)to), sa.addr, constant(0), constant(lanes),
                                          constant(1), constant((int)from)});
            return;
        }
        if (const Select *o = e.as<Select>()) {
            SfuSource mask = compare(o->condition, lanes, t, out);
            SfuSource tv = operand(o->true_value, lanes, out);
            SfuSource fv = operand(o->false_value, lanes, out);
            emit_sfu(out, isa::Opcode::Select, dst, {mask, tv, fv}, lanes, t);
            return;
        }
        if (const Let *o = e.as<Let>()) {
            if (o->value.type().is_scalar()) {
                env_.push_let(o->name, o->value);
                compile_into(o->body, dst, out);
                env_.pop_let(o->name);
                return;
            }
            SfuSource v = operand(o->value, o->value.type().lanes(), out);
            if (v.mode != 0 && v.mode != 1) {
                SymOperand tmp = new_temp(o->value.type().lanes(), o->value.type());
                emit_sfu(out, isa::Opcode::Copy, tmp, {v}, o->value.type().lanes(), o->value.type());
                v.mode = 0;
                v.addr = tmp;
            }
            vector_lets_[o->name].push_back(v);
            compile_into(o->body, dst, out);
            vector_lets_[o->name].pop_back();
            return;
        }
        if (const Call *c = e.as<Call>()) {
            if (c->is_intrinsic(Call::widening_mul) || c->is_intrinsic(Call::widening_add) ||
                c->is_intrinsic(Call::widening_sub)) {
                Expr a = Cast::make(t, c->args[0]), b = Cast::make(t, c->args[1]);
                if (c->is_intrinsic(Call::widening_mul)) return compile_into(Mul::make(a, b), dst, out);
                if (c->is_intrinsic(Call::widening_add)) return compile_into(Add::make(a, b), dst, out);
                return compile_into(Sub::make(a, b), dst, out);
            }
            if (c->is_intrinsic(Call::abs)) return unary(isa::Opcode::Abs, c->args[0]);
            static const std::map<std::string, isa::Opcode> math = {
                {"exp_f32", isa::Opcode::Exp},   {"exp_f16", isa::Opcode::Exp},   {"log_f32", isa::Opcode::Log},
                {"log_f16", isa::Opcode::Log},   {"tanh_f32", isa::Opcode::Tanh}, {"tanh_f16", isa::Opcode::Tanh},
                {"sqrt_f32", isa::Opcode::Sqrt}, {"sqrt_f16", isa::Opcode::Sqrt}};
            auto it = math.find(c->name);
            if (it != math.end()) return unary(it->second, c->args[0]);
            fail("the call '" + c->name + "' has no SFU instruction");
        }
        if (e.as<VectorReduce>()) {
            fail("vector_reduce (a vectorized reduction variable) is not supported; vectorize a pure dimension and "
                 "keep the reduction serial");
        }
        if (e.as<Shuffle>()) fail("shuffles (vector permutations) are not supported on the SFU");
        fail("the expression " + to_text(e) + " has no SFU mapping");
    }

    // A comparison as a 1/0 mask in type t.
    SfuSource compare(const Expr &cond, int lanes, const Type &t, std::vector<ProgramNode> &out) {
        Expr a, b;
        isa::Opcode op;
        bool negate = false;
        if (const LT *o = cond.as<LT>()) a = o->a, b = o->b, op = isa::Opcode::CmpLt;
        else if (const LE *o = cond.as<LE>()) a = o->a, b = o->b, op = isa::Opcode::CmpLe;
        else if (const GT *o = cond.as<GT>()) a = o->b, b = o->a, op = isa::Opcode::CmpLt;
        else if (const GE *o = cond.as<GE>()) a = o->b, b = o->a, op = isa::Opcode::CmpLe;
        else if (const EQ *o = cond.as<EQ>()) a = o->a, b = o->b, op = isa::Opcode::CmpEq;
        else if (const NE *o = cond.as<NE>()) a = o->a, b = o->b, op = isa::Opcode::CmpEq, negate = true;
        else fail("the condition " + to_text(cond) + " is not a comparison the SFU supports");
        const Type ct = a.type();
        SymOperand mask = new_temp(lanes, ct);
        SfuSource sa = operand(a, lanes, out), sb = operand(b, lanes, out);
        emit_sfu(out, op, mask, {sa, sb}, lanes, ct);
        if (negate) {
            SfuSource one;
            one.mode = 2;
            one.imm = immediate_bits(make_one(ct.element_of()), ct);
            SfuSource m;
            m.addr = mask;
            emit_sfu(out, isa::Opcode::Sub, mask, {one, m}, lanes, ct);
        }
        SfuSource r;
        r.addr = mask;
        if (ct.element_of() != t.element_of()) {
            DType from, to;
            if (!spyre_dtype(ct.element_of(), &from) || !spyre_dtype(t.element_of(), &to)) fail("unsupported comparison type");
            SymOperand conv = new_temp(lanes, t);
            emit(out, isa::Opcode::Cast, {conv, constant(0), constant((int)to), mask, constant(0), constant(lanes),
                                          constant(1), constant((int)from)});
            r.addr = conv;
        }
        return r;
    }

    const MachineDescription &m_;
    KernelInterface &iface_;
    IndexEnvironment env_;
    ScratchpadPlan plan_;
    std::map<std::string, std::vector<BufferInfo>> buffers_;
    std::map<std::string, std::vector<SfuSource>> vector_lets_;
    std::vector<std::string> temps_;
    std::vector<PingPongBuffer> pingpong_;
    std::vector<int> loop_ids_;  // ids of the hardware loops being walked, outermost first
    int next_loop_id_ = 0;
    std::map<int, std::vector<std::string>> held_until_loop_end_;  // double-buffered, by loop level
    bool held(const std::string &name) const {
        for (const auto &kv : held_until_loop_end_) {
            for (const std::string &n : kv.second) {
                if (n == name) return true;
            }
        }
        return false;
    }
    int temp_counter_ = 0;
    std::string func_;
    std::string core_loop_;
};

}  // namespace

CoreProgram select_core_instructions(const Stmt &region_body, const std::string &core_var, int core,
                                     const MachineDescription &m, KernelInterface &interface) {
    CoreSelector sel(core_var, core, m, interface);
    return sel.run(region_body);
}

}  // namespace compiler
}  // namespace spyre
