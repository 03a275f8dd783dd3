// Instruction selection for reductions: matmul-shaped update loops become PT
// matmul tiles (loops classified by the operands they move), scalar row
// reductions become sfu.rowsum / sfu.rowmax (a minimum: sfu.rowmax of the
// row under -v or ~v, mapped back; see core_selector.h).
#include "selection/core_selector.h"

namespace spyre {
namespace compiler {
namespace selection {

bool CoreSelector::try_row_reduction(const For *loop, int64_t min, int64_t trip, std::vector<ProgramNode> &out) {
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
    warn_if_unstaged_row_term(loop, lets, st, trip);
    isa::Opcode op;
    Expr a, b;
    // The SFU reduces rows by sum and max; a minimum is the maximum of the row under an order-reversing
    // map, mapped back: -v for floats, ~v = -1 - v for integers (which, unlike -v, never overflows:
    // ~(-128) = 127 in int8).
    bool negated = false;
    if (const Add *o = st->value.as<Add>()) op = isa::Opcode::RowSum, a = o->a, b = o->b;
    else if (const Max *o = st->value.as<Max>()) op = isa::Opcode::RowMax, a = o->a, b = o->b;
    else if (const Min *o = st->value.as<Min>()) op = isa::Opcode::RowMax, a = o->a, b = o->b, negated = true;
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
    if (src_dt != acc_dt || negated) {
        temps_.clear();
        if (src_dt != acc_dt) {
            SymOperand wide = new_temp((int)trip, acc_t);
            emit_cast(out, wide, acc_dt, row, src_dt, trip);
            row = wide;
        }
        if (negated) {
            auto vector = [](const SymOperand &at) {
                SfuSource v;
                v.addr = at;
                return v;
            };
            auto reverse = [&](const SymOperand &to, const SymOperand &from, int n) {
                if (acc_t.is_float()) {
                    emit_sfu(out, isa::Opcode::Neg, to, {vector(from)}, n, acc_t);
                } else {
                    SfuSource all_ones;
                    all_ones.mode = 2;
                    all_ones.imm = immediate_bits(make_const(acc_t.element_of(), -1), acc_t);
                    emit_sfu(out, isa::Opcode::Sub, to, {all_ones, vector(from)}, n, acc_t);
                }
            };
            SymOperand negated_row = new_temp((int)trip, acc_t), negated_acc = new_temp(1, acc_t);
            reverse(negated_row, row, (int)trip);
            reverse(negated_acc, dst, 1);
            emit_reduction(out, op, negated_acc, negated_row, trip, acc_dt);
            reverse(dst, negated_acc, 1);
        } else {
            emit_reduction(out, op, dst, row, trip, acc_dt);
        }
        for (const std::string &tname : temps_) plan_.release(tname);
        temps_.clear();
        return true;
    }
    emit_reduction(out, op, dst, row, trip, acc_dt);
    return true;
}

void CoreSelector::warn_if_unstaged_row_term(const For *loop, const std::vector<const LetStmt *> &lets, const Store *st,
                                             int64_t trip) const {
    Expr v = st->value;
    std::vector<const Let *> inner;
    while (const Let *l = v.as<Let>()) {  // CSE: h(r, y) * h(r, y) is let t = h(r, y) in t * t
        inner.push_back(l);
        v = l->body;
    }
    const bool sum = v.as<Add>() != nullptr, is_min = v.as<Min>() != nullptr;
    Expr a, b;
    if (const Add *o = v.as<Add>()) a = o->a, b = o->b;
    else if (const Max *o = v.as<Max>()) a = o->a, b = o->b;
    else if (const Min *o = v.as<Min>()) a = o->a, b = o->b;
    else return;
    auto self = [&](const Expr &e) {
        const Load *l = e.as<Load>();
        return l && l->name == st->name && equal(l->index, st->index);
    };
    Expr term = self(a) ? b : self(b) ? a : Expr();
    if (!term.defined()) return;
    if (const Cast *c = term.as<Cast>()) term = c->value;
    if (term.as<Load>() || is_const(term) || !term.type().is_scalar()) return;
    for (auto it = inner.rbegin(); it != inner.rend(); ++it) term = substitute((*it)->name, (*it)->value, term);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) term = substitute((*it)->name, (*it)->value, term);
    const std::string row_op = sum ? "sfu.rowsum" : "sfu.rowmax";
    warn_once(loop->name,
              std::string("the update ") + (sum ? "adds " : is_min ? "takes the min of " : "takes the max of ") + to_text(term) +
                  " one element at a time, a loop of " + std::to_string(trip) +
                  " scalar SFU steps per row, because a row reduction (" + row_op +
                  ") reads a row already staged in scratchpad and this term is computed inside the update; "
                  "compute the term in its own Func first (e.g. sq(r, y) = h(r, y) * h(r, y), staged with "
                  "stage_in_scratchpad at the reduction's loop) and reduce that Func: one " + row_op + " per row");
}

Expr CoreSelector::strip_widening_cast(const Expr &e, Type *narrow) {
    if (const Cast *c = e.as<Cast>()) {
        const Type from = c->value.type().element_of();
        if ((c->type.is_float() && c->type.bits() == 32 && from.is_float()) ||
            (c->type.element_of() == Int(32) && from == Int(8))) {
            *narrow = from;
            return c->value;
        }
    }
    *narrow = e.type().element_of();
    return e;
}

bool CoreSelector::match_product(const Expr &p, const Expr &q, MatmulOperands *mm) {
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

// The PT accumulates f16/f32 operands in an f32 C and i8 operands in an i32 C.
// Halide 14 writes the user's i32(a) * i32(b) of int8 a, b as i32(widening_mul(a, b))
// (an int16 product, exact); that form, the plain product of casts and
// widening_mul itself are all accepted.
bool CoreSelector::match_matmul_store(const Store *st, MatmulOperands *mm) {
    if (!scratchpad_buffer(st->name)) return false;
    const Type t = st->value.type();
    const bool int_acc = t.element_of() == Int(32);
    if (!((t.is_float() && t.bits() == 32) || int_acc) || !st->index.as<Ramp>()) return false;
    const Add *add = st->value.as<Add>();
    if (!add) return false;
    for (int swap = 0; swap < 2; swap++) {
        const Expr &accx = swap ? add->b : add->a;
        const Expr &prod = swap ? add->a : add->b;
        const Load *acc = accx.as<Load>();
        if (!acc || acc->name != st->name || !equal(acc->index, st->index)) continue;
        bool ok = false;
        Expr product = prod;
        if (const Cast *widen = product.as<Cast>()) {
            // i32(widening_mul(a, b)) of int8 a, b: the int16 product is exact.
            const Call *w = widen->value.as<Call>();
            if (int_acc && w && w->is_intrinsic(Call::widening_mul)) product = widen->value;
        }
        if (const Mul *mul = product.as<Mul>()) ok = match_product(mul->a, mul->b, mm);
        if (const Call *c = product.as<Call>()) {
            if (c->is_intrinsic(Call::widening_mul)) {
                ok = match_product(c->args[0], c->args[1], mm);
                if (ok) mm->in_type = c->args[0].type().element_of();
            }
        }
        if (ok) {
            mm->acc = acc;
            DType dt;
            if (!spyre_dtype(mm->in_type, &dt) || dt == DType::I32) return false;
            // int8 operands only into an int32 C, float operands only into an f32 C.
            if ((dt == DType::I8) != int_acc) return false;
            return true;
        }
    }
    return false;
}

bool CoreSelector::try_matmul(const For *outer, std::vector<ProgramNode> &out) {
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
    namespace M = isa::field::Matmul;
    emit(out, isa::Opcode::Matmul,
         {{M::c, c}, {M::ldc, constant(ldc)}, {M::a, a}, {M::lda, constant(lda)}, {M::b, b}, {M::ldb, constant(ldb)},
          {M::m, constant(trip_of(m_level))}, {M::n, constant(lanes * trip_of(n_level))}, {M::k, constant(trip_of(k_level))},
          {M::in_type, constant((int)in_dt)}, {M::accumulate, constant(1)}});
    return true;
}

void CoreSelector::emit_reduction(std::vector<ProgramNode> &out, isa::Opcode op, const SymOperand &dst,
                                  const SymOperand &src, int64_t n, DType t) {
    namespace R = isa::field::RowSum;  // the layout every reduction shares (isa.def's SPYRE_SFU_REDUCE)
    emit_as(out, op, isa::Opcode::RowSum,
         {{R::dst, dst}, {R::dst_stride, constant(0)}, {R::a, src}, {R::a_stride, constant(0)}, {R::n, constant(n)},
          {R::rows, constant(1)}, {R::type, constant((int)t)}, {R::accumulate, constant(1)}});
}

}  // namespace selection
}  // namespace compiler
}  // namespace spyre
