// 2-D convolution, "valid" (no padding), stride 1, channels-last:
//   out(co, x, y, b) = act(bias(co) + sum_{ci, kx, ky} in(ci, x + kx, y + ky, b) * w(co, ci, kx, ky))
// act in {none, relu}. Dimensions innermost first: input(ci, width, height,
// batch), weights(co, ci, kw, kh) (co innermost), bias(co), output(co,
// width - kw + 1, height - kh + 1, batch). Shapes are static (GeneratorParams);
// fp16 kernels accumulate in fp32 and round once. The bias is the
// accumulator's initial value.
//
// `pad` (default 0) zero-pads the input by pad pixels on every side of width
// and height (pad = (k - 1) / 2 is a "same" convolution): the input is read
// through BoundaryConditions::constant_exterior(input, 0) and the output is
// (co, width + 2 pad - kw + 1, height + 2 pad - kh + 1, batch). For Spyre the
// staged input rows get their zero rows and pixels written in the scratchpad
// (docs/scheduling.md, "Boundary conditions"); the input tensor is the true
// image. Not here yet: other boundary conditions, strides and dilations.
//
// For Spyre builds ci is padded to whole sticks identically in the input and
// the weights, and the reduction runs over the padded ci (the padding holds
// zeros); every filter row is one PT matmul (n = co, m = output pixels, k =
// kw x ci: its taps folded) on the staged input rows, every tap with pad > 0,
// see schedules/conv2d_schedule.h.
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "Halide.h"
#include "family_generator.h"
#include "shape_limits.h"
#include "conv2d_schedule.h"
#include "schedule_arithmetic.h"
#include "spyre_target.h"
#include "stock_legalization_rules.h"
#include "tensor_constraints.h"

namespace {

using namespace Halide;
using spyre::Activation;

class Conv2d : public spyre::FamilyGenerator<Conv2d, spyre::Conv2dSpyreOptions, spyre::Conv2dSpyrePlan> {
public:
    GeneratorParam<int> ci_size{"ci", 64};
    GeneratorParam<int> co_size{"co", 64};
    GeneratorParam<int> width{"width", 34};
    GeneratorParam<int> height{"height", 34};
    GeneratorParam<int> kw{"kw", 3};
    GeneratorParam<int> kh{"kh", 3};
    GeneratorParam<int> batch{"batch", 1};
    GeneratorParam<int> pad{"pad", 0};  // zero padding on each side of width and height
    GeneratorParam<Type> dtype{"dtype", Float(16)};
    GeneratorParam<Activation> activation{"activation", Activation::None,
                                          {{"none", Activation::None}, {"relu", Activation::Relu}}};
    // Knobs of the Spyre schedule (SPYRE_CONV2D_KNOBS); the defaults are the hand schedule.
    SPYRE_KNOB_GENERATOR_PARAMS(SPYRE_CONV2D_KNOBS)
    SPYRE_KNOB_OPTIONS_FROM_PARAMS(SPYRE_CONV2D_KNOBS, spyre::Conv2dSpyreOptions)

    // Added in configure() because their type is a GeneratorParam.
    Input<Buffer<>> *input = nullptr;    // input(ci, width, height, batch)
    Input<Buffer<>> *weights = nullptr;  // weights(co, ci, kw, kh)
    Input<Buffer<>> *bias = nullptr;     // bias(co)
    Output<Buffer<>> *output = nullptr;  // output(co, width - kw + 1, height - kh + 1, batch)

    void configure() {
        _halide_user_assert((int)pad >= 0) << "conv2d: pad must be >= 0, not " << (int)pad;
        // The padded image's extents must stay 32-bit (computed in 64 bits: pad near INT_MAX overflowed).
        _halide_user_assert((int64_t)width + 2 * (int64_t)pad <= INT32_MAX && (int64_t)height + 2 * (int64_t)pad <= INT32_MAX)
            << "conv2d: pad=" << (int)pad << " is too large: the padded image (width + 2 pad = "
            << (int64_t)width + 2 * (int64_t)pad << ", height + 2 pad = " << (int64_t)height + 2 * (int64_t)pad
            << ") must hold fewer than 2^31 pixels per dimension";
        // The plan and the algorithm see the padded image; the input tensor is the true one.
        shape_ = spyre::Conv2dShape{ci_size, co_size, (int)width + 2 * (int)pad, (int)height + 2 * (int)pad, kw, kh,
                                    batch, dtype, activation, (int)pad};
        spyre::check_conv2d_shape(shape_);
        (void)knob_options();  // every knob in its range or among its values (schedule_knobs.h)
        const Type t = dtype;
        const spyre::ShapeDim ci{"ci", ci_size}, co{"co", co_size}, w{"width", width}, h{"height", height},
            fw{"kw", kw}, fh{"kh", kh}, b{"batch", batch};
        spyre::check_tensor_fits("conv2d", "input", {ci, w, h, b}, t);
        spyre::check_tensor_fits("conv2d", "weights", {co, ci, fw, fh}, t);
        const spyre::ShapeDim ow{"width", shape_.out_width()}, oh{"height", shape_.out_height()};
        spyre::check_tensor_fits("conv2d", "output", {co, ow, oh, b}, t);
        input = add_input<Buffer<>>("input", t, 4);
        weights = add_input<Buffer<>>("weights", t, 4);
        bias = add_input<Buffer<>>("bias", t, 1);
        output = add_output<Buffer<>>("output", t, 4);
    }

    void generate() {
        plan_ = plan_for(knob_options());
        if (spyre::is_spyre() && std::getenv("SPYRE_DEBUG")) {
            std::fprintf(stderr, "conv2d plan: %s, estimate %.1f us\n", describe(plan_).c_str(), plan_.estimated_us);
        }
        const Type t = shape_.dtype;

        // Reduce over the padded ci (== ci for host builds) and the taps.
        const int cip = spyre::padded_extent(shape_.ci, spyre::stick_lanes(t));
        bias_f_(co_) = cast<float>((*bias)(co_));
        acc_(co_, x_, y_, b_) = bias_f_(co_);
        const int P = pad;
        if (P > 0) {
            r_ = RDom(0, cip, 0, shape_.kw, 0, shape_.kh, "r");
            image_ = BoundaryConditions::constant_exterior(*input, Internal::make_zero(t),
                                                           {Range(), Range(0, (int)width), Range(0, (int)height), Range()});
            const Expr tap = image_(r_.x, x_ + r_.y - P, y_ + r_.z - P, b_);
            acc_(co_, x_, y_, b_) += cast<float>(tap) * cast<float>((*weights)(co_, r_.x, r_.y, r_.z));
        } else if (spyre::is_spyre()) {
            // The kw taps of a filter row fold into the PT's k (k = kx x cip + ci, r.y of extent 1):
            // channels-last, the kw pixels' channels of an input row are one contiguous run and a
            // filter row's weights are (kx, ci)-major rows of co, so one matmul per output row and
            // filter row pays one pass fill per kw x cip instead of per cip. The weights' ci is
            // written as k - kx x cip (promised in [0, cip)): a second `k % cip` would be shared
            // through a let, which the PT recognizer does not read.
            r_ = RDom(0, cip * shape_.kw, 0, 1, 0, shape_.kh, "r");
            const Expr kx = r_.x / cip;
            const Expr tap = (*input)(r_.x % cip, x_ + kx, y_ + r_.z, b_);
            const Expr ci = unsafe_promise_clamped(r_.x - kx * cip, 0, cip - 1);
            acc_(co_, x_, y_, b_) += cast<float>(tap) * cast<float>((*weights)(co_, ci, kx, r_.z));
        } else {
            r_ = RDom(0, cip, 0, shape_.kw, 0, shape_.kh, "r");
            const Expr tap = (*input)(r_.x, x_ + r_.y, y_ + r_.z, b_);
            acc_(co_, x_, y_, b_) += cast<float>(tap) * cast<float>((*weights)(co_, r_.x, r_.y, r_.z));
        }
        const Expr v = acc_(co_, x_, y_, b_);
        result_(co_, x_, y_, b_) = cast(t, shape_.activation == Activation::Relu ? max(v, 0.0f) : v);
        (*output)(co_, x_, y_, b_) = result_(co_, x_, y_, b_);

        constrain_tensors();
    }

    // Multiples are the Spyre tiles (ignored by host builds): ci padded identically in the
    // input and the weights; the input padded to the rows and pixels the padded output reads.
    void constrain_tensors() {
        const int xo = shape_.out_width(), yo = shape_.out_height();
        // With padding the staged rows read the image through the boundary, never past it.
        if ((int)pad > 0) {
            spyre::constrain_tensor(*input, {shape_.ci, (int)width, (int)height, shape_.batch}, {plan_.in_lanes, 1, 1, 1});
        } else {
            spyre::constrain_tensor(*input, {shape_.ci, shape_.width, shape_.height, shape_.batch},
                                    {plan_.in_lanes, plan_.in_xp, plan_.in_yp, 1});
        }
        spyre::constrain_tensor(*weights, {shape_.co, shape_.ci, shape_.kw, shape_.kh}, {plan_.cop, plan_.in_lanes, 1, 1});
        spyre::constrain_tensor(*bias, {shape_.co}, {plan_.cop});
        spyre::constrain_tensor(*output, {shape_.co, xo, yo, shape_.batch}, {plan_.cop, plan_.xp, plan_.yp, 1});
    }

    // The family declaration (family_generator.h).
    static constexpr const char *kOptionsType = "spyre::Conv2dSpyreOptions";
    std::string family() const { return "conv2d"; }
    // (With pad > 0 the planner shares nothing over the ring, whatever share_input and share_weights say.)
    spyre::Conv2dSpyrePlan plan_for(const spyre::Conv2dSpyreOptions &o) const { return spyre::plan_conv2d_spyre(shape_, o); }
    void schedule_spyre() {
        spyre::schedule_conv2d_spyre(funcs(), (int)pad > 0 ? image_ : input->in(), weights->in(), bias->in(), shape_, plan_);
    }
    void schedule_host() { spyre::schedule_conv2d_host(funcs(), shape_, get_target()); }
    spyre::KnobValues shape_params() const {
        return {{"ci", std::to_string(shape_.ci)},   {"co", std::to_string(shape_.co)},
                {"width", std::to_string((int)width)}, {"height", std::to_string((int)height)},
                {"kw", std::to_string(shape_.kw)},   {"kh", std::to_string(shape_.kh)},
                {"batch", std::to_string(shape_.batch)}, {"pad", std::to_string((int)pad)},
                {"dtype", spyre::dtype_param(shape_.dtype)},
                {"activation", shape_.activation == Activation::Relu ? "relu" : "none"}};
    }
    // Tiles of one to four sticks of output channels, 8 to 64 pixels of a row (whole PT passes)
    // and 1 to 8 rows, each no larger than the output's (padded) extent.
    std::map<std::string, std::vector<int>> knob_candidates() const {
        const int lanes = spyre::stick_lanes(shape_.dtype);
        std::vector<int> co = {0}, px = {0}, rows = {0};
        for (int c : {lanes, 2 * lanes, 4 * lanes}) {
            if (c <= spyre::round_up(shape_.co, lanes)) co.push_back(c);
        }
        for (int c : {8, 16, 32, 64}) {
            if (c <= spyre::round_up(shape_.out_width(), 8)) px.push_back(c);
        }
        for (int c : {1, 2, 4, 8}) {
            if (c <= shape_.out_height()) rows.push_back(c);
        }
        std::map<std::string, std::vector<int>> c = {{"tile_co", co}, {"tile_x", px}, {"tile_y", rows}};
        if ((int)pad > 0) c["share_input"] = c["share_weights"] = {};  // pad > 0 shares nothing (plan_for)
        return c;
    }
    std::string describe(const spyre::Conv2dSpyrePlan &p) const {
        return "tiles " + std::to_string(p.tn) + " co x " + std::to_string(p.tx) + " px x " + std::to_string(p.ty) +
               " rows, cores " + std::to_string(p.cb) + " x " + std::to_string(p.cn) + " x " + std::to_string(p.cy) + " x " +
               std::to_string(p.cx) + " (batch x co x rows x pixels), padded co " + std::to_string(p.cop) + " x " +
               std::to_string(p.xp) + " x " + std::to_string(p.yp) + ", " + (p.double_buffer ? "double" : "single") +
               "-buffered input" + (p.input_shared ? ", input shared over the ring" : "") +
               (p.weights_shared ? ", weights shared over the ring" : "") + ", " + std::to_string(p.footprint_bytes) +
               " scratchpad bytes per core";
    }
    // A stock autoscheduler's decisions: its tiles of the output along co, x and y as tile_co
    // (whole sticks), tile_x (whole 8-row PT passes) and tile_y, halved (rows, then pixels, then
    // channels) until the planner takes them, or the planner's own when none does (pad > 0
    // needs a core's whole rows in one tile); the accumulator fused per tile; one static core
    // split and whole-stick vectors.
    spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d, std::vector<std::string> *kept,
                                     std::vector<std::string> *changed) {
        const std::string o = Func(*output).name();
        const int lanes = spyre::stick_lanes(shape_.dtype);
        spyre::Conv2dSpyreOptions start;
        start.double_buffer = false;
        spyre::KnobValues v = spyre::knob_values(start);
        const int stock_co = d.tile(o, 0, co_.name()), stock_x = d.tile(o, 0, x_.name()), stock_y = d.tile(o, 0, y_.name());
        int co = stock_co > 0 ? spyre::round_up(std::min(stock_co, spyre::round_up(shape_.co, lanes)), lanes) : 0;
        int px = stock_x > 0 ? spyre::round_up(std::min(stock_x, spyre::round_up(shape_.out_width(), 8)), 8) : 0;
        int rows = stock_y > 0 ? std::min(stock_y, shape_.out_height()) : 0;
        bool shrank = false;
        for (;;) {
            v["tile_co"] = std::to_string(co);
            v["tile_x"] = std::to_string(px);
            v["tile_y"] = std::to_string(rows);
            try {
                (void)plan_for(options_from(v));
                break;
            } catch (const Halide::CompileError &) {
                if (co == 0 && px == 0 && rows == 0) throw;  // the planner's own choice does not fit either
                shrank = true;
                if (rows > 1) rows /= 2;
                else if (px > 8) px = spyre::round_up(px / 2, 8);
                else if (co > lanes) co = spyre::round_up(co / 2, lanes);
                else co = px = rows = 0;  // the planner's own tiles
            }
        }
        auto stock = [](int t) { return t > 0 ? std::to_string(t) : std::string("not split"); };
        kept->push_back("tiles of out along co, x, y: " + stock(stock_co) + ", " + stock(stock_x) + ", " + stock(stock_y) +
                        " -> tile_co=" + std::to_string(co) + " tile_x=" + std::to_string(px) + " tile_y=" +
                        std::to_string(rows) + (shrank ? " (shrunk to fit; 0: the planner's choice)" : " (0: the planner's choice)"));
        spyre::legalize_fusion(d, acc_, o, x_.name(), "per tile in the scratchpad, reduced on the PT", kept, changed);
        spyre::legalize_parallel_and_vectors(d, o, lanes, kept, changed);
        return v;
    }
    std::string schedule_call() const {
        return "spyre::schedule_conv2d_spyre(funcs, pad > 0 ? image_ : input->in(), weights->in(), bias->in(), shape, "
               "spyre::plan_conv2d_spyre(shape, options));\n";
    }

private:
    spyre::Conv2dFuncs funcs() { return {*output, result_, acc_, bias_f_, r_, co_, x_, y_, b_}; }

    Var co_{"co"}, x_{"x"}, y_{"y"}, b_{"b"};
    Func acc_{"acc"}, bias_f_{"bias_f"}, result_{"result"};
    Func image_;  // pad > 0: the input zero-padded through constant_exterior, as the taps read it
    RDom r_;
    spyre::Conv2dShape shape_;
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Conv2d, conv2d)
