// Static evaluation and affine recovery of index expressions (see index_evaluation.h).
#include "selection/index_evaluation.h"

#include <cstdlib>
#include <random>
#include <set>
#include <sstream>

#include "diagnostics.h"

namespace spyre {
namespace compiler {

using namespace Halide;
using namespace Halide::Internal;

void IndexEnvironment::bind_loop(const std::string &name, int level, int64_t min, int64_t trip) {
    loops_[name] = {level, min};
    loop_trips_.push_back(trip);
    loop_names_.push_back(name);
}

void IndexEnvironment::unbind_loop(const std::string &name) {
    loops_.erase(name);
    loop_trips_.pop_back();
    loop_names_.pop_back();
}

void IndexEnvironment::pop_let(const std::string &name) {
    auto it = lets_.find(name);
    it->second.pop_back();
    if (it->second.empty()) lets_.erase(it);
}

namespace {

int64_t euclidean_div(int64_t a, int64_t b) {
    if (b == 0) return 0;  // Halide defines x / 0 == 0
    int64_t q = a / b, r = a % b;
    if (r < 0) q += b > 0 ? -1 : 1;
    return q;
}

int64_t euclidean_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    return a - euclidean_div(a, b) * b;
}

}  // namespace

class IntEvaluator {
public:
    IntEvaluator(const IndexEnvironment &env, const std::vector<int64_t> &point, int lane = 0)
        : env_(env), point_(point), lane_(lane) {}

    int64_t eval(const Expr &e) {
        if (const IntImm *i = e.as<IntImm>()) return i->value;
        if (const UIntImm *u = e.as<UIntImm>()) return (int64_t)u->value;
        if (const Variable *v = e.as<Variable>()) return variable(v->name);
        if (const Add *o = e.as<Add>()) return eval(o->a) + eval(o->b);
        if (const Sub *o = e.as<Sub>()) return eval(o->a) - eval(o->b);
        if (const Mul *o = e.as<Mul>()) return eval(o->a) * eval(o->b);
        if (const Div *o = e.as<Div>()) return euclidean_div(eval(o->a), eval(o->b));
        if (const Mod *o = e.as<Mod>()) return euclidean_mod(eval(o->a), eval(o->b));
        if (const Min *o = e.as<Min>()) return std::min(eval(o->a), eval(o->b));
        if (const Max *o = e.as<Max>()) return std::max(eval(o->a), eval(o->b));
        if (const EQ *o = e.as<EQ>()) return eval(o->a) == eval(o->b);
        if (const NE *o = e.as<NE>()) return eval(o->a) != eval(o->b);
        if (const LT *o = e.as<LT>()) return eval(o->a) < eval(o->b);
        if (const LE *o = e.as<LE>()) return eval(o->a) <= eval(o->b);
        if (const GT *o = e.as<GT>()) return eval(o->a) > eval(o->b);
        if (const GE *o = e.as<GE>()) return eval(o->a) >= eval(o->b);
        if (const And *o = e.as<And>()) return eval(o->a) && eval(o->b);
        if (const Or *o = e.as<Or>()) return eval(o->a) || eval(o->b);
        if (const Not *o = e.as<Not>()) return !eval(o->a);
        if (const Select *o = e.as<Select>()) return eval(o->condition) ? eval(o->true_value) : eval(o->false_value);
        // Vectors: the value of lane `lane_` (scalars ignore it).
        if (const Ramp *o = e.as<Ramp>()) return eval(o->base) + lane_ * eval(o->stride);
        if (const Broadcast *o = e.as<Broadcast>()) {
            const int saved = lane_;
            lane_ = 0;
            const int64_t v = eval(o->value);
            lane_ = saved;
            return v;
        }
        if (const Shuffle *o = e.as<Shuffle>()) {
            if (lane_ < 0 || lane_ >= (int)o->indices.size()) fail(e, "a shuffle lane out of range");
            int index = o->indices[lane_];
            for (const Expr &v : o->vectors) {
                if (index < v.type().lanes()) {
                    const int saved = lane_;
                    lane_ = index;
                    const int64_t r = eval(v);
                    lane_ = saved;
                    return r;
                }
                index -= v.type().lanes();
            }
            fail(e, "a shuffle lane out of range");
        }
        if (const Cast *o = e.as<Cast>()) {
            if (!o->type.is_int_or_uint() || !o->value.type().is_int_or_uint()) fail(e, "a non-integer cast");
            int64_t v = eval(o->value);
            const int bits = o->type.bits();
            if (bits < 64) {
                const uint64_t mask = (uint64_t(1) << bits) - 1;
                uint64_t u = (uint64_t)v & mask;
                if (o->type.is_int() && (u >> (bits - 1))) u |= ~mask;
                v = (int64_t)u;
            }
            return v;
        }
        if (const Let *o = e.as<Let>()) {
            local_[o->name].push_back(eval(o->value));
            int64_t r = eval(o->body);
            local_[o->name].pop_back();
            return r;
        }
        if (const Call *c = e.as<Call>()) {
            if (c->is_intrinsic(Call::likely) || c->is_intrinsic(Call::likely_if_innermost) ||
                c->is_intrinsic(Call::promise_clamped) || c->is_intrinsic(Call::unsafe_promise_clamped)) {
                return eval(c->args[0]);
            }
            if (c->is_intrinsic(Call::abs)) return std::llabs(eval(c->args[0]));
            fail(e, "a call to " + c->name);
        }
        fail(e, "an unsupported expression node");
    }

private:
    int64_t variable(const std::string &name) {
        auto l = local_.find(name);
        if (l != local_.end() && !l->second.empty()) return l->second.back();
        auto c = env_.constants_.find(name);
        if (c != env_.constants_.end()) return c->second;
        auto lp = env_.loops_.find(name);
        if (lp != env_.loops_.end()) return lp->second.min + point_.at(lp->second.level);
        auto let = env_.lets_.find(name);
        if (let != env_.lets_.end()) return eval(let->second.back());
        throw CompileError("index expression uses '" + name +
                           "', which is not a compile-time constant inside the device region (extents, strides and "
                           "bounds must be static: constrain every input and output with spyre::constrain_tensor)");
    }

    [[noreturn]] void fail(const Expr &e, const std::string &what) {
        std::ostringstream os;
        os << "index expression " << e << " contains " << what << "; the Spyre backend needs static integer indices";
        throw CompileError(os.str());
    }

    const IndexEnvironment &env_;
    const std::vector<int64_t> &point_;
    int lane_ = 0;
    std::map<std::string, std::vector<int64_t>> local_;
};

int64_t IndexEnvironment::evaluate(const Expr &e, const std::vector<int64_t> &point) const {
    IntEvaluator ev(*this, point);
    return ev.eval(e);
}

int64_t IndexEnvironment::evaluate_lane(const Expr &e, int lane, const std::vector<int64_t> &point) const {
    IntEvaluator ev(*this, point, lane);
    return ev.eval(e);
}

std::optional<SymOperand> IndexEnvironment::affine_in_loops(const Expr &e) const {
    const int depth = loop_depth();
    std::vector<int64_t> point(depth, 0);
    SymOperand s;
    s.base = evaluate(e, point);
    s.coef.assign(depth, 0);
    for (int d = 0; d < depth; d++) {
        if (loop_trips_[d] < 2) continue;
        point[d] = 1;
        s.coef[d] = evaluate(e, point) - s.base;
        point[d] = 0;
    }
    auto check = [&](const std::vector<int64_t> &p) {
        int64_t expect = s.base;
        for (int d = 0; d < depth; d++) expect += s.coef[d] * p[d];
        return evaluate(e, p) == expect;
    };
    // Exhaustive for small boxes, otherwise corners, every axis and a seeded sample.
    uint64_t points = 1;
    for (int64_t t : loop_trips_) points = points * (uint64_t)t > (1u << 20) ? (1u << 20) + 1 : points * (uint64_t)t;
    if (points <= 4096) {
        std::vector<int64_t> p(depth, 0);
        while (true) {
            if (!check(p)) return std::nullopt;
            int d = depth - 1;
            for (; d >= 0; d--) {
                if (++p[d] < loop_trips_[d]) break;
                p[d] = 0;
            }
            if (d < 0) break;
        }
        return s;
    }
    for (uint32_t mask = 0; mask < (1u << std::min(depth, 12)); mask++) {
        std::vector<int64_t> p(depth, 0);
        for (int d = 0; d < depth; d++) p[d] = (mask >> d & 1) ? loop_trips_[d] - 1 : 0;
        if (!check(p)) return std::nullopt;
    }
    for (int d = 0; d < depth; d++) {
        std::vector<int64_t> p(depth, 0);
        for (int64_t i = 0; i < loop_trips_[d] && i < 4096; i++) {
            p[d] = i;
            if (!check(p)) return std::nullopt;
        }
    }
    std::mt19937_64 rng(12345);
    for (int sample = 0; sample < 2048; sample++) {
        std::vector<int64_t> p(depth);
        for (int d = 0; d < depth; d++) p[d] = (int64_t)(rng() % (uint64_t)loop_trips_[d]);
        if (!check(p)) return std::nullopt;
    }
    return s;
}

namespace {
class VariableNames : public IRVisitor {
public:
    std::set<std::string> names;

private:
    using IRVisitor::visit;
    void visit(const Variable *v) override { names.insert(v->name); }
};
}  // namespace

bool IndexEnvironment::depends_on_loops(const Expr &e) const {
    VariableNames vars;
    e.accept(&vars);
    for (const std::string &n : vars.names) {
        if (loops_.count(n)) return true;
        auto let = lets_.find(n);
        if (let != lets_.end() && depends_on_loops(let->second.back())) return true;
    }
    return false;
}

Halide::Expr expand_lets(const Halide::Expr &e, const std::map<std::string, std::vector<Halide::Expr>> &lets) {
    class ExpandLets : public Halide::Internal::IRMutator {
    public:
        explicit ExpandLets(const std::map<std::string, std::vector<Halide::Expr>> &lets) : lets_(lets) {}

    private:
        using IRMutator::visit;
        Halide::Expr visit(const Halide::Internal::Variable *op) override {
            auto it = lets_.find(op->name);
            if (it == lets_.end() || it->second.empty() || depth_ > 64) return op;
            auto done = expanded_.find(op->name);  // each let expanded once: the result shares it
            if (done != expanded_.end()) return done->second;
            depth_++;
            Halide::Expr v = mutate(it->second.back());
            depth_--;
            expanded_[op->name] = v;
            return v;
        }
        const std::map<std::string, std::vector<Halide::Expr>> &lets_;
        std::map<std::string, Halide::Expr> expanded_;
        int depth_ = 0;
    };
    return ExpandLets(lets).mutate(e);
}

Halide::Expr IndexEnvironment::with_lets(const Halide::Expr &e) const { return expand_lets(e, lets_); }

}  // namespace compiler
}  // namespace spyre
