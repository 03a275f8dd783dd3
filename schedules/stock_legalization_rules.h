// The rules every schedule template's `legalize` shares
// (ScheduleTemplate::legalize, schedules/schedule_template.h): recognising a
// stock schedule's tile loop, keeping or replacing its fusion of a Func, and
// the parallel loops, vectors and double buffering no stock schedule can keep.
// Each appends one human-readable line per decision to `kept` or `changed`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "Halide.h"
#include "schedule_template.h"  // KnobValues
#include "stock_schedule_decisions.h"

namespace spyre {

// Whether `level` ("<func>.<loop>") is the loop of `func` that walks its tiles
// along `var`: the var itself, or the outer loop of its split as the stock
// schedulers name it (var + "o", "_o" or "_vo").
bool at_tile_loop(const std::string &level, const std::string &func, const std::string &var);

// Kept if the stock schedule computes `f` at `func`'s tile loop along `var`,
// else changed to `template_level` (how the template places it).
void legalize_fusion(const StockScheduleDecisions &d, const Halide::Func &f, const std::string &func,
                     const std::string &var, const std::string &template_level, std::vector<std::string> *kept,
                     std::vector<std::string> *changed);

// The stock parallel loops of `out` become one static core split and its
// vectors whole sticks of `lanes` (changed); no double buffering (kept).
void legalize_parallel_and_vectors(const StockScheduleDecisions &d, const std::string &out, int lanes,
                                   std::vector<std::string> *kept, std::vector<std::string> *changed);

// Halves a matmul-shaped tile, n first (to whole sticks of `lanes`) then m (to
// 8-row PT passes), until `plans` accepts it (returns without throwing).
// Returns whether it shrank; throws std::runtime_error if even 8 x lanes fails.
bool shrink_matmul_tile_to_fit(int *tm, int *tn, int lanes, const std::function<void(int tm, int tn)> &plans);

// Halves a tile of rows until `plans` accepts it (returns without throwing);
// only the planners' "does not fit" (std::runtime_error) shrinks, anything else
// propagates. Returns whether it shrank; throws std::runtime_error if even one
// row fails.
bool shrink_rows_to_fit(int *rows, const std::function<void(int rows)> &plans);

// A row-wise family's tile_rows from the stock schedule's tile of its output along y:
// `stock_rows` rows (one, a row per parallel iteration, when the stock schedule did not split
// y; 0 or less means that), at most `extent`, halved as shrink_rows_to_fit does while `plans`
// (the family's planner given the knob values) refuses it. Sets v[knob] to the rows taken,
// says so in `kept`, and returns them. A family whose rows are another dimension names its
// knob and the dimension (rope: "tile_tokens", "t").
int legalize_tile_rows(int stock_rows, int extent, KnobValues &v, const std::function<void(const KnobValues &)> &plans,
                       std::vector<std::string> *kept, const std::string &knob = "tile_rows",
                       const std::string &dim = "y");

}  // namespace spyre
