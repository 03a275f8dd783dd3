// Outputs computed directly, staged through a scratchpad tile (see computed_outputs.h).
#include "selection/computed_outputs.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "diagnostics.h"

namespace spyre {
namespace compiler {

using namespace Halide;
using namespace Halide::Internal;

namespace {

// What a statement does, as far as staging it is concerned.
class StatementSummary : public IRVisitor {
public:
    explicit StatementSummary(const std::set<std::string> &scratchpad) : scratchpad_(scratchpad) {}

    std::set<std::string> stored;  // the buffers it stores to
    bool other_work = false;       // an allocation, a production, a call for its effect
    bool computed = false;         // a store whose value is not a plain load of a scratchpad buffer
    bool dense = true;             // every store's index a scalar or a dense ramp
    Type element;                  // the element type stored (one buffer: one type)
    std::set<std::string> loaded;  // the buffers its values load from

private:
    using IRVisitor::visit;
    void visit(const Store *op) override {
        stored.insert(op->name);
        element = op->value.type().element_of();
        const Load *ld = op->value.as<Load>();
        if (!ld || !scratchpad_.count(ld->name)) computed = true;
        // A tile holds dense vectors: an index that is not one (a strided or gathered store)
        // is left to selection, whose message names it.
        if (const Ramp *r = op->index.as<Ramp>()) dense &= is_const_one(r->stride);
        else dense &= op->index.type().is_scalar();
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        loaded.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Allocate *) override { other_work = true; }
    void visit(const Free *) override { other_work = true; }
    void visit(const Evaluate *) override { other_work = true; }
    void visit(const Prefetch *) override { other_work = true; }
    void visit(const Acquire *) override { other_work = true; }
    void visit(const Fork *) override { other_work = true; }
    void visit(const ProducerConsumer *op) override {
        if (op->is_producer) other_work = true;
        else IRVisitor::visit(op);
    }

    const std::set<std::string> &scratchpad_;
};

// The lowest and highest element index a statement stores to `output`, over every iteration
// of the loops inside it, in terms of what is defined outside it.
class StoredSpan : public IRVisitor {
public:
    explicit StoredSpan(const std::string &output) : output_(output) {}

    Interval span = Interval::nothing();
    std::vector<std::string> inner_names;  // the loops and lets inside the statement

private:
    using IRVisitor::visit;
    void visit(const For *op) override {
        inner_names.push_back(op->name);
        const Interval loop(bounds_of_expr_in_scope(op->min, scope_).min,
                            bounds_of_expr_in_scope(op->min + op->extent - 1, scope_).max);
        ScopedBinding<Interval> bind(scope_, op->name, loop);
        op->body.accept(this);
    }
    void visit(const LetStmt *op) override {
        inner_names.push_back(op->name);
        ScopedBinding<Interval> bind(scope_, op->name, bounds_of_expr_in_scope(op->value, scope_));
        op->body.accept(this);
    }
    void visit(const Store *op) override {
        if (op->name == output_) span.include(bounds_of_expr_in_scope(op->index, scope_));
        IRVisitor::visit(op);
    }

    const std::string &output_;
    Scope<Interval> scope_;
};

// Stores to `output` redirected to `tile` at index - lowest.
class RedirectToTile : public IRMutator {
public:
    RedirectToTile(const std::string &output, const std::string &tile, const Expr &lowest)
        : output_(output), tile_(tile), lowest_(lowest) {}

private:
    using IRMutator::visit;
    Stmt visit(const Store *op) override {
        if (op->name != output_) return IRMutator::visit(op);
        return Store::make(tile_, op->value, tile_index(op->index), Parameter(), op->predicate, ModulusRemainder());
    }

public:
    Expr tile_index(const Expr &index) const {
        const int lanes = index.type().lanes();
        return simplify(index - (lanes > 1 ? Broadcast::make(lowest_, lanes) : lowest_));
    }

private:
    const std::string &output_, &tile_;
    Expr lowest_;
};

// The statement's loops again, each store to `output` now storing the tile's element; loops
// renamed (".store") and lets nothing reads any more dropped.
class CopyFromTile : public IRMutator {
public:
    CopyFromTile(const std::string &output, const std::string &tile, const RedirectToTile &indexing)
        : output_(output), tile_(tile), indexing_(indexing) {}

private:
    using IRMutator::visit;
    Stmt visit(const Store *op) override {
        if (op->name != output_) return IRMutator::visit(op);
        const Expr element = Load::make(op->value.type(), tile_, indexing_.tile_index(op->index), Buffer<>(), Parameter(),
                                        op->predicate, ModulusRemainder());
        return Store::make(op->name, element, op->index, op->param, op->predicate, op->alignment);
    }
    Stmt visit(const For *op) override {
        const std::string name = op->name + ".store";
        Stmt body = substitute(op->name, Variable::make(Int(32), name), mutate(op->body));
        return For::make(name, op->min, op->extent, op->for_type, op->device_api, body);
    }
    Stmt visit(const LetStmt *op) override {
        Stmt body = mutate(op->body);
        if (!stmt_uses_var(body, op->name)) return body;
        return LetStmt::make(op->name, op->value, body);
    }

    const std::string &output_, &tile_;
    const RedirectToTile &indexing_;
};

class OutputStaging : public IRMutator {
public:
    OutputStaging(const std::set<std::string> &outputs, int64_t scratchpad_bytes)
        : outputs_(outputs), scratchpad_bytes_(scratchpad_bytes) {}

private:
    using IRMutator::visit;
    Stmt visit(const Allocate *op) override {
        if (op->memory_type != MemoryType::VTCM) return IRMutator::visit(op);
        scratchpad_.insert(op->name);
        int64_t bytes = op->type.bytes();
        for (const Expr &e : op->extents) {
            const int64_t *c = as_const_int(e);
            bytes *= c ? *c : 0;
        }
        live_bytes_ += bytes;
        Stmt result = IRMutator::visit(op);
        live_bytes_ -= bytes;
        return result;
    }

    // The bytes a tile may take: a quarter of the scratchpad, and at most half of what the
    // buffers live around it leave.
    int64_t tile_budget() const { return std::min(scratchpad_bytes_ / 4, (scratchpad_bytes_ - live_bytes_) / 2); }
    Stmt visit(const For *op) override {
        Stmt staged = stage(op, false);
        return staged.defined() ? staged : IRMutator::visit(op);
    }
    Stmt visit(const Store *op) override {
        Stmt staged = stage(op, true);
        return staged.defined() ? staged : IRMutator::visit(op);
    }

    // `s` staged through a tile, or undefined when it does not qualify (with `innermost`,
    // the store itself, whatever its tile).
    Stmt stage(const Stmt &s, bool innermost) {
        StatementSummary what(scratchpad_);
        s.accept(&what);
        if (what.other_work || what.stored.size() != 1 || !what.computed || !what.dense) return Stmt();
        const std::string output = *what.stored.begin();
        if (!outputs_.count(output)) return Stmt();
        if (what.loaded.count(output)) {
            throw CompileError("Spyre: the output '" + output +
                               "' is updated in place (an update definition reads it from DRAM); the device stores "
                               "to DRAM only from the scratchpad: compute it into a scratchpad Func "
                               "(accumulate_in_scratchpad) and copy that (" + output + "(x, ...) = acc(x, ...))");
        }
        StoredSpan span(output);
        s.accept(&span);
        if (!span.span.is_bounded()) return Stmt();  // a gather: selection's message names it
        const Expr lowest = simplify(span.span.min);
        const Expr elements = simplify(span.span.max - span.span.min + 1);
        const int64_t *count = as_const_int(elements);
        if (!count || expr_uses_vars(lowest, inner_scope(span.inner_names))) {
            if (!innermost) return Stmt();
            throw CompileError("Spyre: the output '" + output +
                               "' is computed while being stored to DRAM and the elements one store writes are not a "
                               "constant range; compute it into a scratchpad Func (store_in(MemoryType::VTCM)) and "
                               "copy that");
        }
        const Type element = what.element;
        if (!innermost && *count * element.bytes() > tile_budget()) return Stmt();

        const std::string tile = unique_tile_name(output);
        scratchpad_.insert(tile);
        RedirectToTile redirect(output, tile, lowest);
        Stmt compute = redirect.mutate(s);
        Stmt copy = CopyFromTile(output, tile, redirect).mutate(s);
        return Allocate::make(tile, element, MemoryType::VTCM, {make_const(Int(32), *count)}, const_true(),
                              Block::make({compute, copy, Free::make(tile)}));
    }

    static Scope<> inner_scope(const std::vector<std::string> &names) {
        Scope<> scope;
        for (const std::string &n : names) scope.push(n);
        return scope;
    }

    std::string unique_tile_name(const std::string &output) {
        std::string name = output + ".tile";
        for (int i = 1; scratchpad_.count(name); i++) name = output + ".tile" + std::to_string(i);
        return name;
    }

    const std::set<std::string> &outputs_;
    const int64_t scratchpad_bytes_;
    int64_t live_bytes_ = 0;  // the scratchpad Allocates around the statement being visited
    std::set<std::string> scratchpad_;
};

}  // namespace

Stmt stage_computed_outputs(const Stmt &body, const std::set<std::string> &outputs, const MachineDescription &m) {
    return OutputStaging(outputs, m.scratchpad_bytes).mutate(body);
}

std::string output_of_tile(const std::string &buffer) {
    const size_t at = buffer.rfind(".tile");
    if (at == std::string::npos) return buffer;
    for (size_t i = at + 5; i < buffer.size(); i++) {
        if (!std::isdigit((unsigned char)buffer[i])) return buffer;
    }
    return buffer.substr(0, at);
}

}  // namespace compiler
}  // namespace spyre
