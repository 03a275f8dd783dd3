// Instruction selection for one core (see instruction_selection.h).
#include "selection/core_selector.h"

#include <array>

#include "program_tree/ring_sharing.h"
#include "program_tree/scratchpad_accesses.h"
#include "selection/computed_outputs.h"

namespace spyre {
namespace compiler {
namespace selection {

CoreProgram CoreSelector::run(const Stmt &body) {
    CoreProgram out;
    walk(body, out.tree);
    // Index tables (index_tables.cpp) are filled before anything reads them.
    out.tree.insert(out.tree.begin(), index_table_fills_.begin(), index_table_fills_.end());
    out.scratchpad_peak = plan_.peak_bytes();
    out.pingpong = pingpong_;
    out.scratchpad_peak_description = plan_.describe_peak();
    out.placements = plan_.placements();
    out.gathered = gathered_;
    return out;
}

// The core loop of a distributed region: this core's iteration, then its parts of the scratchpad
// buffers allocated outside the loop go to core 0 (ring.put), or core 0 waits for all of them.
void CoreSelector::visit_distributed_core_loop(const For *op, std::vector<ProgramNode> &out) {
    if (env_.loop_depth() != 0) {
        fail("the core loop '" + display(op->name) + "' is inside another loop of the region; a core loop that "
             "produces a buffer for core 0 to combine must be the outermost loop of that buffer's production");
    }
    std::vector<std::pair<std::string, BufferInfo>> outside;
    for (const auto &kv : buffers_) outside.push_back({kv.first, kv.second.back()});
    const size_t first = out.size();
    walk(op->body, out);
    past_core_loop_ = true;
    auto writes_of = [&](size_t from, size_t to) {
        std::vector<ScratchpadAccess> w;
        for (size_t i = from; i < to; i++) {
            for (const ScratchpadAccess &a : node_accesses(out[i], {})) {
                if (a.write) w.push_back(a);
            }
        }
        return w;
    };
    const std::vector<ScratchpadAccess> before = writes_of(0, first), writes = writes_of(first, out.size());
    const int channel = gather_channel();
    if (channel >= m_.token_channels_per_core) fail("the machine has too few token channels to gather across cores");
    std::vector<ScratchpadAccess> gathered_ranges;  // every buffer core 0 receives parts of
    std::vector<ProgramNode> puts;
    for (const auto &[name, b] : outside) {
        const int64_t end = b.address + b.bytes;
        int64_t lo = end, hi = b.address;
        for (const ScratchpadAccess &a : writes) {
            if (a.hi <= b.address || a.lo >= end) continue;
            lo = std::min(lo, std::max(a.lo, b.address));
            hi = std::max(hi, std::min(a.hi, end));
        }
        if (lo >= hi) continue;  // not written in the loop: nothing to gather
        for (const ScratchpadAccess &a : before) {
            if (a.lo < end && b.address < a.hi) {
                fail("the scratchpad buffer '" + display(name) + "' is written before the core loop '" +
                     display(op->name) + "' (an initialization?) and by the cores in it: the parts arriving in core "
                     "0 would race with that write; initialize it inside the core loop");
            }
        }
        gathered_.push_back({name, lo, hi});
        gathered_ranges.push_back({b.address, end, true});
        if (core_ != 0) {
            if (lo % m_.stick_bytes != 0 || hi % m_.stick_bytes != 0) {
                fail("core " + std::to_string(core_) + "'s part of the scratchpad buffer '" + display(name) +
                     "' (bytes " + std::to_string(lo - b.address) + " to " + std::to_string(hi - b.address) +
                     ") is not whole sticks, so it cannot be sent over the ring; vectorize the dimension split "
                     "across the cores by whole sticks");
            }
            SymInstruction put;
            put.op = isa::Opcode::RingPut;
            put.func = name;
            put.f[isa::field::RingPut::dst_core] = constant(0);
            put.f[isa::field::RingPut::src] = constant(lo);
            put.f[isa::field::RingPut::dst] = constant(lo);
            put.f[isa::field::RingPut::bytes] = constant(hi - lo);
            put.f[isa::field::RingPut::dst_channel] = constant(channel);
            puts.push_back(ProgramNode::instruction(put));
        }
    }
    if (core_ != 0) {
        out.insert(out.end(), puts.begin(), puts.end());
        return;
    }
    // Core 0: one wait per part of every buffer. The channel counts arrivals, not which buffer
    // arrived, so every wait stands for a write of all the gathered buffers: their readers run
    // only after the last part has landed.
    for (size_t i = 0; i < gathered_ranges.size() * (size_t)(cores_ - 1); i++) {
        SymInstruction wait;
        wait.op = isa::Opcode::Wait;
        wait.func = gathered_.front().buffer;
        wait.stream = isa::Unit::Dma;
        wait.f[isa::field::Wait::channel] = constant(channel);
        wait.declared_writes = gathered_ranges;
        out.push_back(ProgramNode::instruction(wait));
    }
}

void CoreSelector::walk(const Stmt &s, std::vector<ProgramNode> &out) {
    try {
        walk_statement(s, out);
    } catch (const CompileError &e) {
        if (std::string(e.what()).rfind("Spyre:", 0) == 0) throw;
        fail(e.what());  // add the Func and loop to errors from index evaluation
    }
}

void CoreSelector::walk_statement(const Stmt &s, std::vector<ProgramNode> &out) {
    if (!s.defined()) return;
    if (past_core_loop_ && core_ != 0) return;  // after a distributed core loop only core 0 works
    if (const For *op = s.as<For>()) return visit_for(op, out);
    if (const LetStmt *op = s.as<LetStmt>()) {
        if (record_copy_destination(op) || select_buffer_copy(op->value, out)) {
            walk(op->body, out);
            return;
        }
        // A value (a vector, a float, or an integer read from memory: a Tuple update's index) is
        // computed on the SFU; an integer of the indices alone is an index.
        if (op->value.type().is_vector() || op->value.type().is_float() || !reads_no_memory(op->value)) {
            return walk_value_let(op, out);
        }
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
    if (const IfThenElse *op = s.as<IfThenElse>()) {
        // Halide's loop partitioning (a boundary condition's `likely`) guards its prologues and
        // epilogues with conditions on the core index: static once the core is fixed.
        if (resolve_static_condition(op, out)) return;
        fail("a condition (IfThenElse) on " + to_text(op->condition) + " changes between iterations of the loops "
             "inside the core, and the loops must be static. Ragged tails come from splits that do not divide: pad "
             "the tensors with spyre::constrain_tensor multiples and use TailStrategy::RoundUp" + boundary_hint());
    }
    if (s.as<Fork>() || s.as<Acquire>()) fail("async() stages (Fork/Acquire) are not supported by this backend yet");
    if (s.as<Atomic>()) fail("atomic() updates are not supported on Spyre");
    if (s.as<Prefetch>()) fail("prefetch() is not supported on Spyre; stage the data in scratchpad instead");
    fail("unsupported IR node in the device region: " + to_text(s));
}

namespace {

// Whether `s` stores to the buffer `name` (a Store, or a call writing it).
bool stores_to(const Stmt &s, const std::string &name) {
    struct Finder : public IRVisitor {
        const std::string &name;
        bool found = false;
        explicit Finder(const std::string &n) : name(n) {}
        using IRVisitor::visit;
        void visit(const Store *op) override {
            found = found || op->name == name;
            IRVisitor::visit(op);
        }
        void visit(const Call *op) override {
            // A copy or other extern call naming the buffer may write it: assume it does.
            for (const Expr &a : op->args) {
                if (const Variable *v = a.as<Variable>(); v && v->name == name + ".buffer") found = true;
            }
            IRVisitor::visit(op);
        }
    } finder(name);
    s.accept(&finder);
    return finder.found;
}

}  // namespace

void CoreSelector::walk_value_let(const LetStmt *op, std::vector<ProgramNode> &out) {
    vector_let_values_[op->name].push_back(op->value);
    struct Unbind {
        std::vector<Expr> &values;
        ~Unbind() { values.pop_back(); }
    } unbind{vector_let_values_[op->name]};
    const Type t = op->value.type();
    const int lanes = t.lanes();
    temps_.clear();
    SfuSource v = operand(op->value, lanes, out);
    // A dense read of a scratchpad buffer the body does not write (Halide hoists
    // a Func's row read twice, `let t = f[ramp(...)]`): the body reads the row in
    // place; a copy would only cost an SFU pass.
    if (const Load *l = op->value.as<Load>(); l && lanes > 1 && v.mode == 0 && temps_.empty() && !stores_to(op->body, l->name)) {
        vector_lets_[op->name].push_back(v);
        walk(op->body, out);
        vector_lets_[op->name].pop_back();
        return;
    }
    const std::string name = "let." + op->name + "." + std::to_string(temp_counter_++);
    SymOperand addr = constant(plan_.allocate(name, (int64_t)lanes * std::max(t.bytes(), 4)));
    addr.temporary = true;  // written here, read only in the let's body, released after it
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

void CoreSelector::visit_for(const For *op, std::vector<ProgramNode> &out) {
    if (cores_ > 0 && op->name == core_loop_) return visit_distributed_core_loop(op, out);
    if (op->for_type == ForType::Parallel) {
        fail("loop '" + op->name + "' is parallel inside the core split; only one loop may be split across cores");
    }
    if (op->for_type != ForType::Serial) {
        fail("loop '" + op->name + "' has a for-type the Spyre backend does not support (only serial loops run on a core)");
    }
    if (env_.depends_on_loops(op->extent)) {
        // Written in terms of enclosing loops (Halide's partitioned loops, a run of a tile loop
        // split at the image's edges) but the same at every point of their box: that constant.
        const std::optional<SymOperand> extent = env_.affine_in_loops(op->extent);
        if (!extent || extent->depends_on_loops()) {
            fail("loop '" + op->name + "' has an extent (" + to_text(op->extent) + ") that changes between iterations "
                 "of an enclosing loop; extents must be compile-time constants");
        }
        const Stmt fixed = For::make(op->name, op->min, make_const(op->extent.type(), extent->base), op->for_type,
                                     op->device_api, op->body);
        return visit_for(fixed.as<For>(), out);
    }
    if (env_.depends_on_loops(op->min)) {
        if (!env_.affine_in_loops(op->min)) {
            fail("loop '" + op->name + "' starts at " + to_text(op->min) + ", which is not affine in the enclosing "
                 "loops: a tile's rows must start at a constant step per iteration of its tile loop");
        }
        // A loop whose min moves with an enclosing loop (the rows of a tile, with their halo, sliding with
        // the tile loop): the same loop counted from 0, its variable min + count, so every index in it
        // stays affine in the hardware loops when the min is.
        const std::string counter = op->name + kFromMinSuffix;
        const Stmt body = LetStmt::make(op->name, op->min + Variable::make(op->min.type(), counter), op->body);
        const Stmt from_zero = For::make(counter, make_zero(op->min.type()), op->extent, op->for_type, op->device_api, body);
        return visit_for(from_zero.as<For>(), out);
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
        // Unbound after the body: a loop split into runs (boundary_selection.cpp) reuses its name.
        env_.bind_constant(op->name, min);
        walk(op->body, out);
        env_.unbind_constant(op->name);
        return;
    }
    if (try_partition_boundary_loop(op, min, trip, out)) return;
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

void CoreSelector::visit_allocate(const Allocate *op, std::vector<ProgramNode> &out) {
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
             ", which Spyre does not support (float32, float16, int32, int8): " + spyre_type_fix(op->type));
    }
    BufferInfo b;
    b.type = op->type;
    const int64_t bytes = elems * op->type.bytes();
    const bool two_copies = double_buffer_requested(op->name), ahead = computing_ahead_requested(op->name);
    if ((two_copies || ahead) && env_.loop_depth() > 0) {
        // Two copies (or, computed ahead in one copy, one); apply_double_buffering alternates
        // between them. Fresh memory, held until the loop around the staging loop ends: the copies
        // are renamed by address, so no other buffer of the loop body may share these bytes, and
        // the enclosing loop's next iteration loads its first tile into them while this
        // iteration finishes (program_tree/prologue_rotation.h).
        const int64_t copy = (bytes + m_.stick_bytes - 1) / m_.stick_bytes * m_.stick_bytes;
        const int copies = two_copies ? 2 : 1;
        b.address = plan_.allocate_above_peak(op->name, copies * copy);
        b.bytes = copies * copy;
        PingPongBuffer pp;
        pp.name = op->name;
        pp.level = env_.loop_depth() - 1;
        pp.loop_id = loop_ids_.back();
        pp.lo = b.address;
        pp.hi = b.address + copy;
        pp.offset = two_copies ? copy : 0;
        pp.computed_ahead = ahead;
        pingpong_.push_back(pp);
        held_until_loop_end_[std::max(env_.loop_depth() - 2, 0)].push_back(op->name);
    } else {
        b.address = plan_.allocate(op->name, bytes);
        b.bytes = bytes;
    }
    buffers_[op->name].push_back(b);
    walk(op->body, out);
    if (plan_.is_live(op->name) && !held(op->name)) plan_.release(op->name);
    buffers_[op->name].pop_back();
    if (buffers_[op->name].empty()) buffers_.erase(op->name);
}

int64_t CoreSelector::dram_vector_stride(const KernelTensor &t) {
    int64_t stride = 1;
    for (int d = 0; d < t.layout.stick_dim && d < (int)t.padded.size(); d++) stride *= t.padded[d];
    return stride;
}

SymOperand CoreSelector::dense_base(const Expr &index, const std::string &buffer, int lanes, int64_t stride) {
    const Ramp *r = index.as<Ramp>();
    const IntImm *step = r ? r->stride.as<IntImm>() : nullptr;
    if (!r || !step || step->value != stride || r->lanes != lanes) {
        const std::string boundary = inline_boundary_error(index, "the access to '" + buffer + "' at");
        if (!boundary.empty()) fail(boundary);
        if (stride != 1) {
            fail("the access to '" + buffer + "' at " + to_text(index) +
                 " is not a dense vector along its stick dimension (element stride " + std::to_string(stride) +
                 "); vectorize the tensor's stick dimension so each vector is whole sticks" + rfactor_hint());
        }
        fail("the access to '" + buffer + "' at " + to_text(index) +
             " is not a dense vector; vectorize the stick dimension (dimension 0; for a scratchpad Func, its "
             "innermost storage dimension) so each vector is whole sticks" + rfactor_hint());
    }
    auto a = env_.affine_in_loops(r->base);
    if (!a) {
        fail("the index of '" + buffer + "' (" + to_text(r->base) +
             ") is not affine in the loops inside the core; fused or div/mod serial loops cannot become hardware "
             "loops: split and reorder instead of fusing inside a core");
    }
    return *a;
}

void CoreSelector::check_whole_sticks(const Type &t, const std::string &buffer) {
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

void CoreSelector::check_stick_aligned(const SymOperand &bytes_offset, const std::string &what) {
    bool ok = bytes_offset.base % m_.stick_bytes == 0;
    for (int64_t c : bytes_offset.coef) ok = ok && c % m_.stick_bytes == 0;
    if (!ok) {
        // Where the tiles start: the constant offset, plus a step per loop that moves it.
        std::string start = std::to_string(bytes_offset.base) + " bytes";
        const std::vector<std::string> &loops = env_.loop_names();
        for (size_t l = 0; l < bytes_offset.coef.size(); l++) {
            if (bytes_offset.coef[l] == 0) continue;
            start += " + " + std::to_string(bytes_offset.coef[l]) + " per iteration of '" +
                     (l < loops.size() ? loops[l] : "level " + std::to_string(l)) + "'";
        }
        fail("DMA of '" + what + "' is not aligned to whole sticks (offset " + start + "; a stick is " +
             std::to_string(m_.stick_bytes) + " bytes); tiles along the stick dimension must start on stick boundaries: "
             "make every tile along it (a split factor, a K chunk, a per-core share) a whole number of sticks, and read "
             "staged inputs at offsets of whole sticks" + rfactor_hint());
    }
}

void CoreSelector::emit(std::vector<ProgramNode> &out, isa::Opcode op, const std::vector<NamedField> &fields) {
    const isa::OpcodeSpec &spec = isa::opcode_spec(op);
    SymInstruction inst;
    inst.op = op;
    std::array<bool, isa::kMaxFields> set{};
    for (const NamedField &f : fields) {
        if (f.index < 0 || f.index >= spec.num_fields || set[f.index]) {
            throw CompileError("internal: " + std::string(spec.mnemonic) + " built with field index " +
                               std::to_string(f.index) + (f.index >= 0 && f.index < spec.num_fields
                                                              ? " ('" + std::string(spec.fields[f.index].name) + "') twice"
                                                              : ", which it does not have"));
        }
        set[f.index] = true;
        inst.f[f.index] = f.value;
    }
    for (int i = 0; i < spec.num_fields; i++) {
        if (!set[i]) {
            throw CompileError("internal: " + std::string(spec.mnemonic) + " built without its field '" +
                               spec.fields[i].name + "'");
        }
    }
    inst.func = func_;
    out.push_back(ProgramNode::instruction(inst));
}

void CoreSelector::emit_row_load(std::vector<ProgramNode> &out, int arg, const SymOperand &dram, const SymOperand &sp,
                                 int64_t row_bytes) {
    namespace L = isa::field::DmaLoad;
    emit(out, isa::Opcode::DmaLoad,
         {{L::arg, constant(arg)}, {L::dram, dram}, {L::sp, sp}, {L::row_bytes, constant(row_bytes)},
          {L::valid_bytes, constant(row_bytes)}, {L::rows, constant(1)}, {L::dram_row_stride, constant(row_bytes)},
          {L::sp_row_stride, constant(row_bytes)}, {L::valid_rows, constant(1)}, {L::planes, constant(1)},
          {L::dram_plane_stride, constant(0)}, {L::sp_plane_stride, constant(0)}, {L::valid_planes, constant(1)}});
}

void CoreSelector::emit_as(std::vector<ProgramNode> &out, isa::Opcode op, isa::Opcode named_as,
                           const std::vector<NamedField> &fields) {
    const isa::OpcodeSpec &a = isa::opcode_spec(op), &b = isa::opcode_spec(named_as);
    bool same = a.num_fields == b.num_fields;
    for (int i = 0; same && i < a.num_fields; i++) {
        same = std::string(a.fields[i].name) == b.fields[i].name && a.fields[i].kind == b.fields[i].kind;
    }
    if (!same) {
        throw CompileError("internal: " + std::string(a.mnemonic) + " built with the fields of " + b.mnemonic +
                           ", whose layout differs in isa.def");
    }
    emit(out, op, fields);
}

SymOperand CoreSelector::dram_address(const KernelTensor &t, const SymOperand &flat, const std::string &what,
                                      int lanes) {
    const int64_t eb = t.type.bytes();
    const int rank = (int)t.padded.size();
    std::vector<int> host_order;
    for (int d = rank - 1; d >= 0; d--) host_order.push_back(d);
    const bool host_order_layout = t.layout.order.empty() || t.layout.order == host_order;
    if (host_order_layout && t.layout.stick_dim == 0) return scaled(flat, eb, 0);
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
    const int64_t stick_lanes = addr.lanes;
    auto offset = [&](const std::vector<int64_t> &x) {
        int64_t o = 0;
        for (int d = 0; d < rank; d++) {
            o += d == t.layout.stick_dim ? x[d] / stick_lanes * addr.stride_bytes[d] : x[d] * addr.stride_bytes[d];
        }
        return o;
    };
    if (x0[t.layout.stick_dim] % stick_lanes != 0) fail("the access to '" + what + "' does not start on a stick boundary");
    // One DMA row moves the vector's bytes contiguously: its sticks must be adjacent in the device layout.
    if (lanes > stick_lanes && addr.stride_bytes[t.layout.stick_dim] != m_.stick_bytes) {
        fail("the access to '" + what + "' is a vector of " + std::to_string(lanes / stick_lanes) +
             " sticks, but the device layout " + layout_to_string(t.layout) +
             " does not keep consecutive sticks adjacent (the stick dimension is not innermost in the order); "
             "vectorize by one stick (" + std::to_string(stick_lanes) + " lanes) or put the stick dimension last "
             "in the order");
    }
    SymOperand out;
    out.base = offset(x0);
    for (size_t i = 0; i < step.size(); i++) {
        if (step[i][t.layout.stick_dim] % stick_lanes != 0) {
            fail("the access to '" + what + "' moves by part of a stick along the stick dimension");
        }
        out.set_coef(i, offset(step[i]));
    }
    return out;
}

void CoreSelector::visit_store(const Store *op, std::vector<ProgramNode> &out) {
    // Inside the core loop of an output's production no `produce` node names the
    // Func: the stored buffer does (an output is stored under its Func's name).
    struct RestoreFunc {
        std::string &f;
        std::string saved;
        ~RestoreFunc() { f = saved; }
    } restore{func_, func_};
    if (func_.empty()) func_ = output_of_tile(op->name);  // an output computed into its tile: name the output
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

    if (dram_dst) {
        const Load *ld = op->value.as<Load>();
        const BufferInfo *src = ld ? scratchpad_buffer(ld->name) : nullptr;
        if (!src) {
            fail("the output '" + op->name + "' is computed while being stored to DRAM (" + to_text(op->value) +
                 "); compute it into a scratchpad Func (store_in(MemoryType::VTCM)) and copy that");
        }
        const SymOperand dst = dense_base(op->index, op->name, lanes, dram_vector_stride(*dram_dst));
        SymOperand sp = scaled(dense_base(ld->index, ld->name, lanes), eb, src->address);
        SymOperand dram = dram_address(*dram_dst, dst, op->name, lanes);
        check_stick_aligned(dram, op->name);
        check_stick_aligned(sp, ld->name);
        const int64_t row = lanes * eb;
        namespace S = isa::field::DmaStore;
        emit(out, isa::Opcode::DmaStore,
             {{S::arg, constant(dram_dst->arg_index)}, {S::dram, dram}, {S::sp, sp}, {S::row_bytes, constant(row)},
              {S::rows, constant(1)}, {S::dram_row_stride, constant(row)}, {S::sp_row_stride, constant(row)},
              {S::planes, constant(1)}, {S::dram_plane_stride, constant(0)}, {S::sp_plane_stride, constant(0)}});
        return;
    }
    // Destination in scratchpad.
    const SymOperand dst = dense_base(op->index, op->name, lanes);
    if (select_boundary_store(op, dst, out)) return;
    if (const Load *ld = op->value.as<Load>()) {
        if (const KernelTensor *src = dram_tensor(ld->name)) {
            SymOperand dram =
                dram_address(*src, dense_base(ld->index, ld->name, lanes, dram_vector_stride(*src)), ld->name, lanes);
            SymOperand sp = scaled(dst, eb, sp_dst->address);
            check_stick_aligned(dram, ld->name);
            check_stick_aligned(sp, op->name);
            const int64_t row = lanes * eb;
            emit_row_load(out, src->arg_index, dram, sp, row);
            return;
        }
    }
    temps_.clear();
    SymOperand dst_addr = scaled(dst, eb, sp_dst->address);
    compile_into(op->value, dst_addr, out);
    for (const std::string &tname : temps_) plan_.release(tname);
    temps_.clear();
}

}  // namespace selection

int gather_channel() { return kUnitPairChannels + 2 * kMaxSharedFuncs; }  // after the unit pairs and ring sharing's

CoreProgram select_core_instructions(const Halide::Internal::Stmt &region_body, const std::string &core_var, int core,
                                     const MachineDescription &m, KernelInterface &interface, bool distributed,
                                     int cores) {
    selection::CoreSelector sel(core_var, core, m, interface);
    if (distributed) sel.distribute(cores);
    return sel.run(region_body);
}

}  // namespace compiler
}  // namespace spyre
