// What every suite generator shares, written once: its schedule() (the hand
// schedule, the host reference schedule, or, with auto_schedule=true, the
// family's schedule template for the Spyre autoscheduler) and that template
// (schedules/schedule_template.h: apply, source and legalize) built from a
// short family declaration. A generator then holds its algorithm, its tensors
// and the declaration.
//
// A generator derives from FamilyGenerator<Gen, Options, Plan> instead of
// Halide::Generator<Gen>, keeps its plan in `plan_` (set in generate() from
// knob_options(), which SPYRE_KNOB_OPTIONS_FROM_PARAMS declares), and declares:
//
//   static constexpr const char *kOptionsType = "spyre::XSpyreOptions";  // for the template's source
//   std::string family() const;              // its -g name: the lowering's and the template's
//   Plan plan_for(const Options &o) const;   // its planner on the generator's shape
//   void constrain_tensors();                // the tensors' padding for plan_
//   void schedule_spyre();                   // the family's Spyre schedule of plan_
//   void schedule_host();                    // the host reference schedule
//   spyre::KnobValues shape_params() const;  // its other GeneratorParams, as given on the command line
//   std::string describe(const Plan &p) const;  // the plan in words (the source's first line)
//   std::string schedule_call() const;       // the schedule call a person pastes after the options
//
// and may declare, hiding the defaults below:
//
//   Options options_from(const spyre::KnobValues &v) const;  // knob values -> Options (non-knob fields too)
//   std::map<std::string, std::vector<int>> knob_candidates() const;  // the knob_from_shape knobs' candidates
//   void check_plan(const Plan &p) const;    // refuse knob values that would change the algorithm
//   std::string knob_lines(const Options &o) const;  // the `options.x = ...;` lines of the source
//   spyre::KnobValues legalize_stock(const spyre::StockScheduleDecisions &d,
//                                    std::vector<std::string> *kept, std::vector<std::string> *changed);
//     // a stock autoscheduler's decisions on the knobs; a family without it is not legalized
//
// The declarations are public members of the generator (CRTP: the mixin calls
// them on the generator, so a generator's own version replaces the default).
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "Halide.h"
#include "schedule_knobs.h"
#include "schedule_template.h"
#include "spyre_lowering.h"
#include "spyre_target.h"
#include "stock_schedule_decisions.h"

namespace spyre {

namespace family_detail {
template <typename G, typename = void>
struct has_legalize_stock : std::false_type {};
template <typename G>
struct has_legalize_stock<G, std::void_t<decltype(std::declval<G &>().legalize_stock(
                                 std::declval<const StockScheduleDecisions &>(), std::declval<std::vector<std::string> *>(),
                                 std::declval<std::vector<std::string> *>()))>> : std::true_type {};
}  // namespace family_detail

template <typename Gen, typename Options, typename Plan>
class FamilyGenerator : public Halide::Generator<Gen> {
public:
    // The hand schedule (auto_schedule=false), or the family's template for the Spyre
    // autoscheduler (auto_schedule=true; the stock autoschedulers ignore it and schedule
    // the pipeline themselves); tensors, estimates and the Spyre lowering stay either way.
    void schedule() {
        Gen &g = self();
        const bool hand = !this->get_auto_schedule();
        if (is_spyre()) {
            if (hand) {
                g.schedule_spyre();
            } else {
                register_schedule_template(make_template());
            }
            attach_spyre_lowering(this->get_pipeline(), lowering_options_from_driver(g.family()));
        } else if (hand) {
            g.schedule_host();
        }
    }

    // The defaults a family may replace (see the top of this file).
    Options options_from(const KnobValues &v) const { return options_of<Options>(v); }
    std::map<std::string, std::vector<int>> knob_candidates() const { return {}; }
    void check_plan(const Plan &) const {}
    std::string knob_lines(const Options &o) const { return knob_assignments(o); }

protected:
    Plan plan_;

private:
    Gen &self() { return static_cast<Gen &>(*this); }

    ScheduleTemplate make_template() {
        Gen &g = self();
        ScheduleTemplate t;
        t.generator = g.family();
        t.output = this->get_pipeline().outputs().front().name();
        t.fixed = g.shape_params();
        t.knobs = schedule_knobs(g.knob_options(), g.knob_candidates());
        t.apply = [this](const KnobValues &v) {
            Gen &g = self();
            const Plan p = g.plan_for(g.options_from(v));
            g.check_plan(p);
            plan_ = p;
            g.constrain_tensors();
            g.schedule_spyre();
        };
        t.source = [this](const KnobValues &v) {
            Gen &g = self();
            const Options o = g.options_from(v);
            std::ostringstream os;
            os << "// plan: " << g.describe(g.plan_for(o)) << "\n"
               << Gen::kOptionsType << " options;\n"
               << g.knob_lines(o) << g.schedule_call();
            return os.str();
        };
        if constexpr (family_detail::has_legalize_stock<Gen>::value) {
            t.legalize = [this](const StockScheduleDecisions &d, std::vector<std::string> *kept,
                                std::vector<std::string> *changed) { return self().legalize_stock(d, kept, changed); };
        }
        return t;
    }
};

// "double-buffered" or "single-buffered", and the footprint: the end every plan description shares.
inline std::string buffering_and_footprint(bool double_buffer, int64_t footprint_bytes) {
    return std::string(double_buffer ? "double" : "single") + "-buffered, " + std::to_string(footprint_bytes) +
           " scratchpad bytes per core";
}

// A dtype GeneratorParam's value as the command line spells it.
inline std::string dtype_param(const Halide::Type &t) {
    return t == Halide::Int(8) ? "int8" : t.bits() == 16 ? "float16" : "float32";
}

}  // namespace spyre
