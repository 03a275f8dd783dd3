// Instruction selection for vector arithmetic: Halide expression trees over
// scratchpad become SFU instructions, inner nodes through scratchpad
// temporaries; constants become immediates, scalars per-row operands and
// Param<> scalars run-time parameters (see core_selector.h).
#include "selection/core_selector.h"

namespace spyre {
namespace compiler {
namespace selection {

SymOperand CoreSelector::new_temp(int lanes, const Type &t) {
    const std::string name = "sfu.tmp." + std::to_string(temp_counter_++);
    temps_.push_back(name);
    SymOperand o = constant(plan_.allocate(name, (int64_t)lanes * std::max(t.bytes(), 4)));
    o.temporary = true;
    return o;
}

uint32_t CoreSelector::immediate_bits(const Expr &v, const Type &t) {
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

int CoreSelector::param_index(const std::string &name, const Type &t, const Parameter &param) {
    for (size_t i = 0; i < iface_.scalar_params.size(); i++) {
        if (iface_.scalar_params[i] == name) return (int)i;
    }
    iface_.scalar_params.push_back(name);
    iface_.param_types[name] = t;
    iface_.param_objects[name] = param;
    return (int)iface_.scalar_params.size() - 1;
}

SfuSource CoreSelector::operand(const Expr &e, int lanes, std::vector<ProgramNode> &out) {
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
            if (!spyre_dtype(ld->type.element_of(), &dt)) {
                fail("'" + ld->name + "' has element type " + type_text(ld->type.element_of()) +
                     ", which Spyre does not support: " + spyre_type_fix(ld->type.element_of()));
            }
            SymOperand tmp = new_temp(r->lanes, ld->type);
            // A gather: r->lanes rows of one element, `stride` elements apart.
            namespace C = isa::field::Copy;
            emit(out, isa::Opcode::Copy,
                 {{C::dst, tmp}, {C::dst_stride, constant(eb)}, {C::a, scaled(*a, eb, b->address)},
                  {C::a_stride, constant(stride * eb)}, {C::a_mode, constant(0)}, {C::n, constant(1)},
                  {C::rows, constant(r->lanes)}, {C::type, constant((int)dt)}, {C::imm, constant(0)}});
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
        // A scalar computed from the indices alone: one lane, used as a per-row scalar (index_tables.cpp).
        SfuSource index;
        if (computed_index_scalar(v, &index, out)) return index;
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
        SfuSource index;
        if (index_operand(e, &index)) return index;  // a loop index as a value (index_tables.cpp)
        fail("the vector variable '" + var->name + "' is not defined in scratchpad");
    }
    if (is_const(e)) {
        SfuSource s;
        s.mode = 2;
        s.imm = immediate_bits(e, e.type());
        return s;
    }
    if (const Ramp *r = e.as<Ramp>()) {
        SfuSource index;
        if (index_operand(e, &index)) return index;  // consecutive indices (index_tables.cpp)
        if (r->base.type() == Int(32) && !env_.depends_on_loops(r->stride) && reads_no_memory(e)) {
            // base + stride * (0, 1, ..., lanes - 1), the last from a table.
            const Expr unit = Ramp::make(make_zero(r->base.type()), make_one(r->base.type()), r->lanes);
            SfuSource s;
            s.mode = 0;
            s.addr = new_temp(lanes, e.type());
            compile_into(Broadcast::make(r->base, r->lanes) + Broadcast::make(r->stride, r->lanes) * unit, s.addr, out);
            return s;
        }
        fail("the index vector " + to_text(e) + " has no SFU mapping: an index used as a value must be int32 and "
             "affine in the core's loops (x, 2 * y + x, not x / 2 or a value read from memory)");
    }
    SfuSource s;
    s.mode = 0;
    s.addr = new_temp(lanes, e.type());
    compile_into(e, s.addr, out);
    return s;
}

void CoreSelector::emit_sfu(std::vector<ProgramNode> &out, isa::Opcode op, const SymOperand &dst, std::vector<SfuSource> src,
              int n, const Type &t) {
    DType dt;
    if (!spyre_dtype(t.element_of(), &dt)) {
        fail("arithmetic in type " + type_text(t.element_of()) + " is not supported on Spyre (float32, float16, int32, int8): " +
             spyre_type_fix(t.element_of()));
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
        namespace C = isa::field::Copy;
        emit(out, isa::Opcode::Copy,
             {{C::dst, tmp}, {C::dst_stride, constant(0)}, {C::a, constant(0)}, {C::a_stride, constant(0)},
              {C::a_mode, constant(s.mode)}, {C::n, constant(n)}, {C::rows, constant(1)}, {C::type, constant((int)dt)},
              {C::imm, constant(s.imm)}});
        s.mode = 0;
        s.addr = tmp;
    }
    // The unary, binary and ternary layouts (isa.def's SPYRE_SFU_UNARY/BINARY/TERNARY), named through
    // one opcode of each; emit_as() checks the opcode has exactly these fields.
    auto address = [](const SfuSource &s) { return s.mode < 2 ? s.addr : constant(0); };
    std::vector<NamedField> f;
    isa::Opcode named_as = isa::Opcode::Copy;
    if (src.size() == 1) {
        namespace U = isa::field::Copy;
        f = {{U::dst, dst}, {U::dst_stride, constant(0)}, {U::a, address(src[0])}, {U::a_stride, constant(0)},
             {U::a_mode, constant(src[0].mode)}, {U::n, constant(n)}, {U::rows, constant(1)}, {U::type, constant((int)dt)},
             {U::imm, constant(imm)}};
    } else if (src.size() == 2) {
        namespace B = isa::field::Add;
        named_as = isa::Opcode::Add;
        f = {{B::dst, dst}, {B::dst_stride, constant(0)}, {B::a, address(src[0])}, {B::a_stride, constant(0)},
             {B::a_mode, constant(src[0].mode)}, {B::b, address(src[1])}, {B::b_stride, constant(0)},
             {B::b_mode, constant(src[1].mode)}, {B::n, constant(n)}, {B::rows, constant(1)}, {B::type, constant((int)dt)},
             {B::imm, constant(imm)}};
    } else if (src.size() == 3) {
        namespace T = isa::field::Fma;
        named_as = isa::Opcode::Fma;
        f = {{T::dst, dst}, {T::dst_stride, constant(0)}, {T::a, address(src[0])}, {T::a_stride, constant(0)},
             {T::a_mode, constant(src[0].mode)}, {T::b, address(src[1])}, {T::b_stride, constant(0)},
             {T::b_mode, constant(src[1].mode)}, {T::c, address(src[2])}, {T::c_stride, constant(0)},
             {T::c_mode, constant(src[2].mode)}, {T::n, constant(n)}, {T::rows, constant(1)},
             {T::type, constant((int)dt)}, {T::imm, constant(imm)}};
    } else {
        throw CompileError("internal: an SFU instruction with " + std::to_string(src.size()) + " sources");
    }
    emit_as(out, op, named_as, f);
}

void CoreSelector::emit_cast(std::vector<ProgramNode> &out, const SymOperand &dst, DType to, const SymOperand &src,
                             DType from, int64_t n) {
    namespace C = isa::field::Cast;
    emit(out, isa::Opcode::Cast,
         {{C::dst, dst}, {C::dst_stride, constant(0)}, {C::dst_type, constant((int)to)}, {C::a, src},
          {C::a_stride, constant(0)}, {C::n, constant(n)}, {C::rows, constant(1)}, {C::type, constant((int)from)}});
}

void CoreSelector::compile_into(const Expr &e, const SymOperand &dst, std::vector<ProgramNode> &out) {
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
    if (e.as<Load>() || e.as<Broadcast>() || is_const(e) || e.as<Variable>() || e.as<Ramp>()) {
        return unary(isa::Opcode::Copy, e);
    }
    if (const Add *o = e.as<Add>()) return binary(isa::Opcode::Add, o->a, o->b);
    if (const Sub *o = e.as<Sub>()) return binary(isa::Opcode::Sub, o->a, o->b);
    if (const Mul *o = e.as<Mul>()) return binary(isa::Opcode::Mul, o->a, o->b);
    if (const Div *o = e.as<Div>()) {
        if (!t.is_float()) {
            fail("integer division (" + type_text(t.element_of()) + ") is not supported on the SFU, which divides floats "
                 "only: divide in float32 and cast back (Halide's a / b keeps the remainder non-negative: "
                 "floor(f32(a) / f32(b)) for b > 0, ceil(...) for b < 0, exact while |a| and |b| are below 2^23), "
                 "or compute the quotient on the host");
        }
        return binary(isa::Opcode::Div, o->a, o->b);
    }
    if (const Min *o = e.as<Min>()) return binary(isa::Opcode::Min, o->a, o->b);
    if (const Max *o = e.as<Max>()) return binary(isa::Opcode::Max, o->a, o->b);
    if (const Cast *o = e.as<Cast>()) {
        if (o->value.type().element_of() == t.element_of()) return compile_into(o->value, dst, out);
        if (const Call *w = o->value.as<Call>()) {
            // i32(a) * i32(b) of int8 a, b, which Halide wrote i32(widening_mul(a, b)): the int16
            // middle value is exact, so the op in the cast's type gives the same result.
            const bool widening = w->is_intrinsic(Call::widening_mul) || w->is_intrinsic(Call::widening_add) ||
                                  w->is_intrinsic(Call::widening_sub);
            const Type et = t.element_of();
            if (widening && w->args[0].type().element_of() == Int(8) && w->args[1].type().element_of() == Int(8) &&
                (et == Int(32) || et == Float(32) || et == Float(16))) {
                Expr a = Cast::make(t, w->args[0]), b = Cast::make(t, w->args[1]);
                if (w->is_intrinsic(Call::widening_mul)) return compile_into(Mul::make(a, b), dst, out);
                if (w->is_intrinsic(Call::widening_add)) return compile_into(Add::make(a, b), dst, out);
                return compile_into(Sub::make(a, b), dst, out);
            }
            refuse_unsupported_widening(w, t);
        }
        SfuSource sa = operand(o->value, lanes, out);
        DType from, to;
        if (!spyre_dtype(o->value.type().element_of(), &from) || !spyre_dtype(t.element_of(), &to)) {
            const Type bad = spyre_dtype(o->value.type().element_of(), &from) ? t.element_of() : o->value.type().element_of();
            fail("cast from " + type_text(o->value.type().element_of()) + " to " + type_text(t.element_of()) +
                 " is not supported on Spyre (it has no " + type_text(bad) + "): " + spyre_type_fix(bad));
        }
        if (sa.mode != 0) {
            SymOperand tmp = new_temp(lanes, o->value.type());
            emit_sfu(out, isa::Opcode::Copy, tmp, {sa}, lanes, o->value.type());
            sa.mode = 0;
            sa.addr = tmp;
        }
        emit_cast(out, dst, to, sa.addr, from, lanes);
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
            refuse_unsupported_widening(c, t);
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
    if (const Shuffle *sh = e.as<Shuffle>()) {
        // Each element repeated within the vector: what Halide makes of in(x / k, ...) along the
        // vectorized stick dimension (an upsampling).
        bool repeats = sh->is_interleave() && sh->vectors.size() > 1;
        for (size_t i = 1; repeats && i < sh->vectors.size(); i++) repeats = equal(sh->vectors[i], sh->vectors[0]);
        if (repeats) {
            fail("upsampling along the stick dimension (" + to_text(e) + ": each element repeated " +
                 std::to_string(sh->vectors.size()) +
                 " times within a vector, as in(x / " + std::to_string(sh->vectors.size()) +
                 ", ...) along the vectorized dimension) is not supported: the SFU computes lane by lane and "
                 "reads its operands as whole sticks, with no instruction that spreads a half stick over a "
                 "stick, and a DMA moves whole sticks, never single elements; upsample along another "
                 "dimension (in(x, y / 2) compiles: whole rows repeated), or store the tensor with its stick "
                 "along a dimension you do not upsample (constrain_tensor's stick_dim)");
        }
        fail("shuffles (vector permutations: " + to_text(e) + ") are not supported on the SFU; vectorize the stick "
             "dimension of every Func this definition reads (dimension 0, innermost in storage) so each vector is "
             "dense" + rfactor_hint());
    }
    if (e.type().is_bool()) {  // only a condition on the indices; a computed value keeps the message below
        const std::string boundary = inline_boundary_error(e, "the expression");
        if (!boundary.empty()) fail(boundary);
    }
    fail("the expression " + to_text(e) + " has no SFU mapping");
}

// Halide rewrites i32(a) * i32(b) of narrow a, b into i32(widening_mul(a, b)), whose
// middle type (int16 for int8, uint16 for uint8) may have no Spyre dtype. Of int8
// values the cast of the widening op compiles (see compile_into's Cast); what is
// left is refused here, naming what the user wrote, not the middle type.
void CoreSelector::refuse_unsupported_widening(const Call *w, const Type &user_type) const {
    const char *op = w->is_intrinsic(Call::widening_mul)   ? "*"
                     : w->is_intrinsic(Call::widening_add) ? "+"
                     : w->is_intrinsic(Call::widening_sub) ? "-"
                                                           : nullptr;
    DType dt;
    if (!op || spyre_dtype(w->type.element_of(), &dt)) return;
    auto operand_name = [](const Expr &e) {
        if (const Load *l = e.as<Load>()) return display(l->name);
        return to_text(e);
    };
    const std::string narrow = type_text(w->args[0].type().element_of());
    const std::string wide = type_text(user_type.element_of());
    const std::string cast = wide == "int32" ? "i32" : wide == "float32" ? "f32" : wide == "float16" ? "f16" : wide;
    const std::string a = operand_name(w->args[0]), b = operand_name(w->args[1]);
    fail(cast + "(" + a + ") " + op + " " + cast + "(" + b + ") of " + narrow + " values is evaluated by Halide as " +
         narrow + " " + op + " " + narrow + " -> " + type_text(w->type.element_of()) + " (a widening " + op +
         ") before the cast to " + wide + ", and " + type_text(w->type.element_of()) +
         " has no sticks on Spyre (float32, float16, int32, int8); widen the inputs in staged Funcs first, "
         "e.g. a_wide(x, y) = " + cast + "(" + a + "(x, y)) and b_wide likewise, each with stage_in_scratchpad, and "
         "compute a_wide(x, y) " + op + " b_wide(x, y) (int8 operands need no widening: i32(a) " + op +
         " i32(b) compiles on the SFU, and a sum over k of i32(A(k, m)) * i32(B(n, k)) runs on the PT with "
         "spyre::matmul_on_pt)");
}

SfuSource CoreSelector::compare(const Expr &cond, int lanes, const Type &t, std::vector<ProgramNode> &out) {
    if (const Call *c = cond.as<Call>(); c && (c->is_intrinsic(Call::likely) || c->is_intrinsic(Call::likely_if_innermost))) {
        return compare(c->args[0], lanes, t, out);
    }
    SfuSource fixed;
    if (static_mask(cond, lanes, t, &fixed, out)) return fixed;  // a mask on the indices (boundary_selection.cpp)
    Expr a, b;
    isa::Opcode op;
    bool negate = false;
    if (const LT *o = cond.as<LT>()) a = o->a, b = o->b, op = isa::Opcode::CmpLt;
    else if (const LE *o = cond.as<LE>()) a = o->a, b = o->b, op = isa::Opcode::CmpLe;
    else if (const GT *o = cond.as<GT>()) a = o->b, b = o->a, op = isa::Opcode::CmpLt;
    else if (const GE *o = cond.as<GE>()) a = o->b, b = o->a, op = isa::Opcode::CmpLe;
    else if (const EQ *o = cond.as<EQ>()) a = o->a, b = o->b, op = isa::Opcode::CmpEq;
    else if (const NE *o = cond.as<NE>()) a = o->a, b = o->b, op = isa::Opcode::CmpEq, negate = true;
    else if (cond.as<And>() || cond.as<Or>()) {
        // Both masks in t, then their product (and) or their maximum (or).
        const bool is_and = cond.as<And>() != nullptr;
        const Expr &ca = is_and ? cond.as<And>()->a : cond.as<Or>()->a;
        const Expr &cb = is_and ? cond.as<And>()->b : cond.as<Or>()->b;
        SfuSource ma = compare(ca, lanes, t, out), mb = compare(cb, lanes, t, out);
        SfuSource r;
        r.addr = new_temp(lanes, t);
        emit_sfu(out, is_and ? isa::Opcode::Mul : isa::Opcode::Max, r.addr, {ma, mb}, lanes, t);
        return r;
    } else if (const Not *o = cond.as<Not>()) {
        SfuSource m = compare(o->a, lanes, t, out), one;
        one.mode = 2;
        one.imm = immediate_bits(make_one(t.element_of()), t);
        SfuSource r;
        r.addr = new_temp(lanes, t);
        emit_sfu(out, isa::Opcode::Sub, r.addr, {one, m}, lanes, t);
        return r;
    } else fail("the condition " + to_text(cond) + " is not a comparison the SFU supports");
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
        if (!spyre_dtype(ct.element_of(), &from) || !spyre_dtype(t.element_of(), &to)) {
            const Type bad = spyre_dtype(ct.element_of(), &from) ? t.element_of() : ct.element_of();
            fail("a comparison of " + type_text(ct.element_of()) + " values selecting " + type_text(t.element_of()) +
                 " is not supported on Spyre: " + spyre_type_fix(bad));
        }
        SymOperand conv = new_temp(lanes, t);
        emit_cast(out, conv, to, mask, from, lanes);
        r.addr = conv;
    }
    return r;
}

}  // namespace selection
}  // namespace compiler
}  // namespace spyre
