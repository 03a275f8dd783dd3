// The shared legalization rules (see stock_legalization_rules.h).
#include "stock_legalization_rules.h"

#include <algorithm>

#include <string>

#include "schedule_context.h"
#include "spyre/machine.h"

namespace spyre {

bool at_tile_loop(const std::string &level, const std::string &func, const std::string &var) {
    if (level.rfind(func + ".", 0) != 0) return false;
    const std::string loop = level.substr(func.size() + 1);
    return loop == var || loop == var + "o" || loop == var + "_o" || loop == var + "_vo";
}

void legalize_fusion(const StockScheduleDecisions &d, const Halide::Func &f, const std::string &func,
                     const std::string &var, const std::string &template_level, std::vector<std::string> *kept,
                     std::vector<std::string> *changed) {
    const StockFuncDecision *s = d.find(f.name());
    const std::string level = s ? s->compute_at : "inline";
    if (at_tile_loop(level, func, var)) {
        kept->push_back(f.name() + " fused into the tiles (computed at " + level + "): " + template_level);
    } else {
        changed->push_back(f.name() + " computed " + (level == "inline" || level == "root" ? "" : "at ") + level + " -> " +
                           template_level);
    }
}

void legalize_parallel_and_vectors(const StockScheduleDecisions &d, const std::string &out, int lanes,
                                   std::vector<std::string> *kept, std::vector<std::string> *changed) {
    std::string parallel;
    int width = 0;
    if (const StockFuncDecision *o = d.find(out)) {
        for (const auto &st : o->stages) {
            for (const std::string &p : st.parallel) {
                parallel += (parallel.empty() ? "" : ", ") + p.substr(p.rfind('.') + 1);  // "y.y" -> "y"
            }
            if (st.vector_width != 0 && width <= 0) width = st.vector_width;
        }
    }
    changed->push_back("parallel loops [" + parallel + "] -> one static split of the tiles over at most the machine's " +
                       std::to_string(scheduling_machine().cores) + " cores");
    if (width != lanes) {
        const std::string stock = width > 0 ? "vectors of " + std::to_string(width) + " lanes"
                                  : width < 0 ? std::string("vectors of a whole loop") : std::string("no vectors");
        changed->push_back(stock + " -> whole " + std::to_string(lanes) + "-lane sticks");
    }
    kept->push_back("no double buffering, as the stock schedule has no DMA overlap");
}

bool shrink_matmul_tile_to_fit(int *tm, int *tn, int lanes, const std::function<void(int tm, int tn)> &plans) {
    bool shrunk = false;
    for (;;) {
        try {
            plans(*tm, *tn);
            return shrunk;
        } catch (const Halide::CompileError &) {
            if (*tn > lanes) *tn = (*tn / 2 + lanes - 1) / lanes * lanes;
            else if (*tm > 8) *tm = (*tm / 2 + 7) / 8 * 8;
            else throw std::runtime_error("no tile of the stock schedule's shape fits the scratchpad");
            shrunk = true;
        }
    }
}

bool shrink_rows_to_fit(int *rows, const std::function<void(int rows)> &plans) {
    bool shrunk = false;
    for (;;) {
        try {
            plans(*rows);
            return shrunk;
        } catch (const std::runtime_error &) {  // Halide::CompileError too; knob errors are std::logic_error
            if (*rows <= 1) throw std::runtime_error("not even one row per tile fits the scratchpad");
            *rows /= 2;
            shrunk = true;
        }
    }
}

int legalize_tile_rows(int stock_rows, int extent, KnobValues &v, const std::function<void(const KnobValues &)> &plans,
                       std::vector<std::string> *kept, const std::string &knob, const std::string &dim) {
    int rows = std::min(std::max(stock_rows, 1), extent);
    const bool shrank = shrink_rows_to_fit(&rows, [&](int r) {
        v[knob] = std::to_string(r);
        plans(v);
    });
    kept->push_back((stock_rows > 0 ? "tile of out along " + dim + ": " + std::to_string(stock_rows) + " rows"
                                    : dim + " not split (one row per iteration)") +
                    " -> " + knob + "=" + std::to_string(rows) + (shrank ? " (shrunk to fit the scratchpad)" : ""));
    return rows;
}

}  // namespace spyre
