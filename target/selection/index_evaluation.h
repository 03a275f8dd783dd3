// Evaluating the integer index expressions of lowered Halide IR at compile
// time. Inside the device region everything is static: the core index is a
// constant per core, every loop has a constant extent, and buffer strides
// are constants. An index is therefore a function of the enclosing hardware
// loops' indices; `affine_in_loops` recovers it as base + sum(coef * L) and
// proves the form over the whole iteration box (every point for small boxes;
// corners, axes and a seeded sample otherwise), so div/mod/min/max that are
// not affine are reported rather than silently mis-compiled.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Halide.h"
#include "program_tree/program_tree.h"

namespace spyre {
namespace compiler {

// `e` with every name bound in `lets` (the innermost binding of each: the vector's last) replaced
// by its value, recursively, each let expanded once; for messages that say what an expression
// is made of.
Halide::Expr expand_lets(const Halide::Expr &e, const std::map<std::string, std::vector<Halide::Expr>> &lets);

// What names mean while evaluating: constants (core index, degenerate loops),
// hardware loop variables (by level) and let-bound expressions.
class IndexEnvironment {
public:
    void bind_constant(const std::string &name, int64_t v) { constants_[name] = v; }
    void unbind_constant(const std::string &name) { constants_.erase(name); }
    bool has_constant(const std::string &name) const { return constants_.count(name) != 0; }
    void bind_loop(const std::string &name, int level, int64_t min, int64_t trip);
    void unbind_loop(const std::string &name);
    void push_let(const std::string &name, const Halide::Expr &value) { lets_[name].push_back(value); }
    void pop_let(const std::string &name);

    int loop_depth() const { return (int)loop_trips_.size(); }
    const std::vector<int64_t> &loop_trips() const { return loop_trips_; }
    const std::vector<std::string> &loop_names() const { return loop_names_; }

    // Value of a scalar integer expression at the given loop indices (one per level).
    // Throws CompileError naming the construct when it is not a static integer.
    int64_t evaluate(const Halide::Expr &e, const std::vector<int64_t> &point) const;
    // Value of one lane of an integer or boolean vector expression (ramps, broadcasts,
    // lane-wise arithmetic, comparisons, selects, min/max, shuffles of them) at the loop indices.
    int64_t evaluate_lane(const Halide::Expr &e, int lane, const std::vector<int64_t> &point) const;

    // The expression as base + sum(coef[level] * L_level), proven over the loop box.
    // Returns nullopt when it is not affine in the loops.
    std::optional<SymOperand> affine_in_loops(const Halide::Expr &e) const;

    // The expression with every let-bound name replaced by its value (recursively), for
    // recognizing what an index is made of (a clamp behind a let) in messages.
    Halide::Expr with_lets(const Halide::Expr &e) const;

    // Does the expression refer to any hardware loop variable?
    bool depends_on_loops(const Halide::Expr &e) const;

private:
    struct LoopBinding {
        int level;
        int64_t min;
    };
    std::map<std::string, int64_t> constants_;
    std::map<std::string, LoopBinding> loops_;
    std::map<std::string, std::vector<Halide::Expr>> lets_;
    std::vector<int64_t> loop_trips_;
    std::vector<std::string> loop_names_;

    friend class IntEvaluator;
};

}  // namespace compiler
}  // namespace spyre
