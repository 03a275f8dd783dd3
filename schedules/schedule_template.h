// Schedule templates: a kernel family's Spyre schedule with its knobs, offered
// to the Spyre autoscheduler (autoscheduler/, docs/autoscheduling.md).
//
// A suite generator built with auto_schedule=true for Spyre registers one
// template for its pipeline (keyed by the output Func's name) instead of
// applying its hand schedule. The autoscheduler, called by Halide with that
// pipeline, finds the template, measures candidate knob values by compiling
// the same generator with those values in a child process and simulating
// the program (timing only), then calls `apply` with the best values on the
// pipeline it was given.
//
// Assumes one generator instance per process is being autoscheduled at a
// time (Halide's generator driver builds one pipeline per run).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "stock_schedule_decisions.h"

namespace spyre {

// Knob name -> value, as the generator's GeneratorParams spell them.
using KnobValues = std::map<std::string, std::string>;

struct ScheduleKnob {
    std::string name;
    std::vector<std::string> values;  // the candidates; values[0] is the generator's current value
};

struct ScheduleTemplate {
    std::string generator;  // registered generator name (-g)
    std::string output;     // the pipeline's output Func name
    KnobValues fixed;       // the generator's other params (shape, dtype, op...): kept as they are
    std::vector<ScheduleKnob> knobs;
    // Schedules the registering generator's Funcs with these knob values
    // (re-plans, re-declares the tensors' padding, applies the family schedule).
    std::function<void(const KnobValues &)> apply;
    // Code a person can paste into the generator's schedule() to get the same schedule.
    std::function<std::string(const KnobValues &)> source;
    // The legalization layer's projection of a stock autoscheduler's decisions
    // onto these knobs: appends one line per decision to `kept` (carried over,
    // possibly rounded to Spyre's rules) or `changed` (not expressible, with the
    // reason). Throws std::runtime_error when nothing sensible can be kept.
    // Unset: the family cannot be legalized yet.
    std::function<KnobValues(const StockScheduleDecisions &, std::vector<std::string> *kept,
                             std::vector<std::string> *changed)>
        legalize;
};

// A knob whose candidates are `current` followed by `candidates` (duplicates dropped).
ScheduleKnob make_knob(const std::string &name, const std::string &current, const std::vector<std::string> &candidates);
ScheduleKnob make_knob(const std::string &name, int current, const std::vector<int> &candidates);
ScheduleKnob make_knob(const std::string &name, bool current);  // both values, the current one first

// Reads a knob of `v` (throws std::invalid_argument if it is missing or malformed).
int knob_int(const KnobValues &v, const std::string &name);
bool knob_bool(const KnobValues &v, const std::string &name);

// The knobs' current values (values[0] of each).
KnobValues default_knob_values(const ScheduleTemplate &t);

// "k1=v1 k2=v2 ..." in knob order (generator command-line form).
std::string knob_string(const ScheduleTemplate &t, const KnobValues &v);

// Records `t` (replacing a template of the same output name).
void register_schedule_template(ScheduleTemplate t);

// The template registered for the pipeline whose output Func is `output`, or nullptr.
const ScheduleTemplate *find_schedule_template(const std::string &output);

// The names of the outputs that have templates (for error messages).
std::vector<std::string> schedule_template_outputs();

}  // namespace spyre
