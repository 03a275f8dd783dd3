// The autoschedulers "Legalized_Mullapudi2016", "Legalized_Adams2019" and
// "Legalized_Li2018" of the Spyre plugin: the stock autoscheduler (its plugin
// loaded as well, -p <stock.so>,libautoschedule_spyre.so, or by this plugin
// from Halide's package when it is not), then the
// legalization layer (stock_legalization.h) and the family's template's
// `legalize`, which keep its tiling and fusion as far as the template can
// express them. What was kept and what was changed goes to stderr and to the
// top of the schedule source (-e schedule).
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "Halide.h"
#include "stock_legalization.h"
#include "template_lookup.h"

namespace spyre::autoscheduler {
namespace {

// The stock autoscheduler's result, loading its plugin when the generator did not (-p <stock.so>):
// the plugin Halide's package installs (SPYRE_STOCK_PLUGIN_<NAME>, set at build time), so one
// plugin, ours, is enough on the command line and in add_spyre_library. A stock plugin already
// loaded (from any path) is used as it is: it is only loaded when Halide does not know the name.
StockScheduleDecisions stock_decisions(const std::string &stock, const Halide::Pipeline &pipeline,
                                       const Halide::Target &target, const Halide::MachineParams &params,
                                       std::string *source) {
    // Halide's table of autoschedulers is not synchronized: the lookup and a plugin's
    // registration into it never overlap (in-process legalizations run one at a time).
    static std::mutex table;
    std::lock_guard<std::mutex> lock(table);
    try {
        return run_stock_autoscheduler(pipeline, stock, target, params, source);
    } catch (const Halide::CompileError &e) {
        if (std::string(e.what()).find("Unknown autoscheduler name") == std::string::npos) throw;
    }
    static const std::map<std::string, std::string> installed = {
        {"Mullapudi2016", SPYRE_STOCK_PLUGIN_MULLAPUDI2016},
        {"Adams2019", SPYRE_STOCK_PLUGIN_ADAMS2019},
        {"Li2018", SPYRE_STOCK_PLUGIN_LI2018}};
    const std::string &path = installed.at(stock);
    if (path.empty()) {
        throw Halide::CompileError("Spyre legalization of " + stock + ": the stock autoscheduler is not loaded; load "
                                   "its plugin with -p (this build of the Spyre plugin found no Halide::" + stock +
                                   " plugin to load itself)");
    }
    try {
        Halide::load_plugin(path);
    } catch (const Halide::CompileError &e) {
        throw Halide::CompileError("Spyre legalization of " + stock + ": the stock autoscheduler is not loaded (-p) and "
                                   "its plugin " + path + " (Halide 14's package) cannot be loaded: " + e.what());
    }
    return run_stock_autoscheduler(pipeline, stock, target, params, source);
}

// "Legalized_<Name>": runs the stock autoscheduler <Name> (its plugin loaded by the
// generator, -p libautoschedule_mullapudi2016.so,libautoschedule_spyre.so, or else by
// stock_decisions above), keeps its tiling and fusion decisions as far as the family's Spyre template
// can express them, and applies that template. Says what it kept and what it
// changed (stderr, and the schedule source).
void legalize_stock_schedule(const std::string &stock, const Halide::Pipeline &pipeline, const Halide::Target &target,
                             const Halide::MachineParams &params, Halide::AutoSchedulerResults *results) {
    const std::string who = "Spyre legalization of " + stock;
    const ScheduleTemplate &tpl = template_for(pipeline, who);
    if (!tpl.legalize) {
        throw Halide::CompileError(who + ": the " + tpl.generator + " template has no legalization yet");
    }
    std::string stock_source;
    const StockScheduleDecisions decisions = stock_decisions(stock, pipeline, target, params, &stock_source);
    std::vector<std::string> kept, changed;
    KnobValues knobs;
    try {
        knobs = tpl.legalize(decisions, &kept, &changed);
    } catch (const std::exception &e) {
        throw Halide::CompileError(who + " (" + tpl.generator + "): " + e.what());
    }
    std::ostringstream notes;
    for (const std::string &k : kept) notes << "//   kept: " << k << "\n";
    for (const std::string &c : changed) notes << "//   changed: " << c << "\n";
    std::fprintf(stderr, "spyre legalization: %s on %s -> %s\n%s", stock.c_str(), tpl.generator.c_str(),
                 knob_string(tpl, knobs).c_str(), notes.str().c_str());
    tpl.apply(knobs);
    if (results) {
        std::ostringstream os;
        os << "// Spyre legalization of the " << stock << " schedule of gen_" << tpl.generator << ":\n"
           << notes.str() << "// On the command line: gen_" << tpl.generator << " ... " << knob_string(tpl, knobs) << "\n"
           << "// The " << stock << " decisions read:\n";
        std::istringstream lines(describe_decisions(decisions));
        for (std::string l; std::getline(lines, l);) os << "//   " << l << "\n";
        os << tpl.source(knobs);
        results->scheduler_name = "Legalized_" + stock;
        results->target = target;
        results->machine_params_string = params.to_string();
        results->schedule_source = os.str();
    }
}

// Registered when the plugin is loaded (-p), next to "Spyre".
struct RegisterLegalizedAutoschedulers {
    RegisterLegalizedAutoschedulers() {
        for (const char *stock : {"Mullapudi2016", "Adams2019", "Li2018"}) {
            const std::string name = stock;
            Halide::Pipeline::add_autoscheduler(
                "Legalized_" + name, [name](const Halide::Pipeline &p, const Halide::Target &t,
                                            const Halide::MachineParams &mp, Halide::AutoSchedulerResults *r) {
                    legalize_stock_schedule(name, p, t, mp, r);
                });
        }
    }
} register_legalized_autoschedulers;

}  // namespace
}  // namespace spyre::autoscheduler
