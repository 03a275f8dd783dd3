// A user's own Spyre generator, built against the installed package only
// (SpyreHalide::spyre_generator_main + SpyreHalide::spyre_schedules), as the
// README says: out(x, y) = in(x, y) * 3 + 1 in fp32, for `cols` x `rows`.
//
// Its Spyre schedule uses the documented vocabulary (constrain_tensor,
// split_row_tiles_across_cores, stage_in_scratchpad / double_buffer,
// double_buffer_result, attach_spyre_lowering). With auto_schedule=true it
// registers a schedule template whose knobs are its GeneratorParams
// `tile_rows` and `double_buffer`, so the installed Spyre autoscheduler
// plugin (-p libautoschedule_spyre.so -s Spyre) can search and apply them:
// the package test builds it that way and checks the result on the simulated
// device (main.cpp).
#include <string>

#include "Halide.h"
#include "schedule_template.h"
#include "spyre_lowering.h"
#include "spyre_schedule.h"
#include "spyre_target.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;

class RowScale : public Generator<RowScale> {
public:
    GeneratorParam<int> cols{"cols", 256};
    GeneratorParam<int> rows{"rows", 64};
    // Schedule knobs: rows per scratchpad tile (must divide rows / cores) and double buffering.
    GeneratorParam<int> tile_rows{"tile_rows", 2};
    GeneratorParam<bool> double_buffer{"double_buffer", false};

    Input<Buffer<float, 2>> in{"in"};
    Output<Buffer<float, 2>> out{"out"};

    void generate() {
        result_(x_, y_) = in(x_, y_) * 3.0f + 1.0f;
        out(x_, y_) = result_(x_, y_);
        spyre::constrain_tensor(in, {cols, rows});
        spyre::constrain_tensor(out, {cols, rows});
        out.set_estimates({{0, cols}, {0, rows}});
        in.set_estimates({{0, cols}, {0, rows}});
    }

    void schedule() {
        if (!spyre::is_spyre()) return;  // host: Halide's default schedule
        if (get_auto_schedule()) {
            register_template();
        } else {
            apply(tile_rows, double_buffer);
        }
        spyre::attach_spyre_lowering(get_pipeline(), spyre::lowering_options_from_driver("row_scale"));
    }

private:
    static constexpr int kCores = 8;

    void apply(int tile, bool db) {
        const int lanes = 32;  // fp32 lanes of a stick
        const spyre::RowTileLoops loops =
            spyre::split_row_tiles_across_cores(out, x_, y_, rows, kCores, tile, lanes);
        spyre::stage_in_scratchpad(in.in(), out, loops.yo, db);
        result_.compute_at(out, loops.yo).store_in(MemoryType::VTCM).vectorize(x_, lanes, TailStrategy::RoundUp);
        if (db) spyre::double_buffer_result(result_);
    }

    void register_template() {
        spyre::ScheduleTemplate t;
        t.generator = "row_scale";
        t.output = Func(out).name();
        t.fixed = {{"cols", std::to_string((int)cols)}, {"rows", std::to_string((int)rows)}};
        t.knobs = {spyre::make_knob("tile_rows", tile_rows, {1, 2, 4}), spyre::make_knob("double_buffer", double_buffer)};
        t.apply = [this](const spyre::KnobValues &v) {
            apply(spyre::knob_int(v, "tile_rows"), spyre::knob_bool(v, "double_buffer"));
        };
        t.source = [](const spyre::KnobValues &v) {
            return "// row_scale: tile_rows=" + v.at("tile_rows") + " double_buffer=" + v.at("double_buffer") + "\n";
        };
        spyre::register_schedule_template(std::move(t));
    }

    Var x_{"x"}, y_{"y"};
    Func result_{"result"};
};

}  // namespace

HALIDE_REGISTER_GENERATOR(RowScale, row_scale)
