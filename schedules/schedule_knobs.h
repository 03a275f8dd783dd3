// The knob tables: each schedule family's knobs listed once, as an X-macro in
// its schedule header, and everything else generated from that list:
//   SPYRE_KNOB_MEMBERS(LIST)             the <Family>SpyreOptions members, with defaults;
//   SPYRE_KNOB_GENERATOR_PARAMS(LIST)    the generator's GeneratorParam<T> name{"name", default};
//   SPYRE_KNOB_OPTIONS_FROM_PARAMS(LIST, Options)
//                                        the generator's `Options knob_options() const`
//                                        (the GeneratorParams copied into the options);
//   options_of<Options>(values)          KnobValues -> Options (the template's apply and source);
//   knob_values(options)                 Options -> KnobValues (legalization maps);
//   knob_assignments(options)            the `options.name = value;` lines of a template's source;
//   schedule_knobs(options, from_shape)  the template's knob list, each knob's candidates.
// A list entry is
//   X(type, name, default, "what it does", candidates)
// with type bool, int or std::string. `candidates` are what the Spyre
// autoscheduler tries besides the current value: a braced list ({0, 64, 128}
// or {"zyx", "yzx"}), spyre::knob_bools (true and false), spyre::knob_core_counts
// (max_cores: usable_cores(current) first, then core_count_candidates()) or
// spyre::knob_from_shape (the generator computes them from the shape and passes
// them to schedule_knobs by name). Adding a knob is one line in the list (and its
// use in the planner). A bool knob given an empty list in `from_shape` has no
// effect on the generator's shape and is not searched (only its current value);
// so is a std::string knob given one (its values stay the ones listed: the generator
// leaves that choice to its planner).
//
// Assumes: every knob is a GeneratorParam of the family's generator with the
// knob's name (the autoscheduler compiles candidates as `name=value` generator
// arguments), and the list order is the order the template offers the knobs
// (knob_string, the search) and the order of the source lines.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "schedule_arithmetic.h"
#include "schedule_template.h"

namespace spyre {

// The candidate values of one knob (the last column of a list entry).
struct KnobBools {};
struct KnobCoreCounts {};
struct KnobFromShape {};
inline constexpr KnobBools knob_bools{};
inline constexpr KnobCoreCounts knob_core_counts{};
inline constexpr KnobFromShape knob_from_shape{};

struct KnobCandidates {
    enum class Kind { Listed, Bools, CoreCounts, FromShape };
    Kind kind = Kind::Listed;
    std::vector<int> ints;             // Listed, int knobs
    std::vector<std::string> strings;  // Listed, std::string knobs (also the allowed values)

    KnobCandidates(KnobBools) : kind(Kind::Bools) {}
    KnobCandidates(KnobCoreCounts) : kind(Kind::CoreCounts) {}
    KnobCandidates(KnobFromShape) : kind(Kind::FromShape) {}
    KnobCandidates(std::initializer_list<int> v) : ints(v) {}
    KnobCandidates(std::initializer_list<const char *> v) : strings(v.begin(), v.end()) {}
};

// Options struct members, and `visit_knobs(options, visit)` calling
// visit(name, member, candidates) for each knob in list order.
#define SPYRE_KNOB_MEMBER_(type, name, default_value, doc, ...) type name = default_value;
#define SPYRE_KNOB_VISIT_(type, name, default_value, doc, ...) \
    visit(#name, self.name, ::spyre::KnobCandidates(__VA_ARGS__));
#define SPYRE_KNOB_MEMBERS(LIST)                          \
    LIST(SPYRE_KNOB_MEMBER_)                              \
    template <typename Self, typename Visit>              \
    static void visit_knobs(Self &self, Visit &&visit) {  \
        LIST(SPYRE_KNOB_VISIT_)                           \
    }

// The generator's GeneratorParams of the knobs (name and default from the list).
#define SPYRE_KNOB_GENERATOR_PARAM_(type, name, default_value, doc, ...) \
    ::Halide::GeneratorParam<type> name{#name, default_value};
#define SPYRE_KNOB_GENERATOR_PARAMS(LIST) LIST(SPYRE_KNOB_GENERATOR_PARAM_)

// The largest value an integer knob takes. Tiles, chunks and core counts are far smaller on any
// machine the ranges of machine_params.def allow, and this bound keeps every planner's rounding
// and products of knob values inside 32-bit ints (a knob near INT_MAX used to overflow: a SIGFPE,
// or a refusal quoting a number the user never gave).
constexpr int kMaxIntKnob = 1 << 20;

// A knob as its GeneratorParam gives it: an integer knob in [0, kMaxIntKnob], a string knob
// one of its listed values, or a compile error quoting the value as given.
inline void check_knob_value(const char *name, int value, const KnobCandidates &) {
    _halide_user_assert(value >= 0 && value <= kMaxIntKnob)
        << "knob " << name << "=" << value << " is out of range: it takes 0 (chosen by the planner) to " << kMaxIntKnob;
}
inline void check_knob_value(const char *, bool, const KnobCandidates &) {}
inline void check_knob_value(const char *name, const std::string &value, const KnobCandidates &c) {
    bool listed = c.strings.empty();
    std::string list;
    for (size_t i = 0; i < c.strings.size(); i++) {
        listed = listed || value == c.strings[i];
        list += (i == 0 ? "" : i + 1 == c.strings.size() ? " or " : ", ") + c.strings[i];
    }
    _halide_user_assert(listed) << "knob " << name << "=" << value << " is not one of its values: " << list;
}

// The generator's `Options knob_options() const`: the options its GeneratorParams set, each checked.
#define SPYRE_KNOB_PARAM_TO_OPTION_(type, name, default_value, doc, ...)               \
    ::spyre::check_knob_value(#name, name.value(), ::spyre::KnobCandidates(__VA_ARGS__)); \
    spyre_knob_options_.name = name.value();
#define SPYRE_KNOB_OPTIONS_FROM_PARAMS(LIST, Options) \
    Options knob_options() const {                    \
        Options spyre_knob_options_;                  \
        LIST(SPYRE_KNOB_PARAM_TO_OPTION_)             \
        return spyre_knob_options_;                   \
    }

// A string knob's value, one of `allowed` (throws std::invalid_argument naming them).
inline std::string knob_choice(const KnobValues &v, const std::string &name, const std::vector<std::string> &allowed) {
    auto it = v.find(name);
    bool ok = it != v.end() && allowed.empty();
    for (const std::string &a : allowed) ok = ok || (it != v.end() && it->second == a);
    if (!ok) {
        std::string list;
        for (size_t i = 0; i < allowed.size(); i++) {
            list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
        }
        throw std::invalid_argument("schedule template: knob '" + name + "' must be " + list);
    }
    return it->second;
}

// A knob value as KnobValues spell it, and as C++ source.
inline std::string knob_text(bool b) { return b ? "true" : "false"; }
inline std::string knob_text(int x) { return std::to_string(x); }
inline std::string knob_text(const std::string &s) { return s; }
inline std::string knob_source_text(bool b) { return knob_text(b); }
inline std::string knob_source_text(int x) { return knob_text(x); }
inline std::string knob_source_text(const std::string &s) { return "\"" + s + "\""; }

template <typename Options>
Options options_of(const KnobValues &v) {
    Options o;
    Options::visit_knobs(o, [&](const char *name, auto &member, const KnobCandidates &c) {
        using T = std::decay_t<decltype(member)>;
        if constexpr (std::is_same_v<T, bool>) {
            member = knob_bool(v, name);
        } else if constexpr (std::is_same_v<T, int>) {
            member = knob_int(v, name);
        } else {
            static_assert(std::is_same_v<T, std::string>, "knobs are bool, int or std::string");
            member = knob_choice(v, name, c.strings);
        }
    });
    return o;
}

template <typename Options>
KnobValues knob_values(const Options &o) {
    KnobValues v;
    Options::visit_knobs(o, [&](const char *name, const auto &member, const KnobCandidates &) { v[name] = knob_text(member); });
    return v;
}

// "options.name = value;\n" per knob in list order, except those in `skip`.
template <typename Options>
std::string knob_assignments(const Options &o, const std::set<std::string> &skip = {}) {
    std::string s;
    Options::visit_knobs(o, [&](const char *name, const auto &member, const KnobCandidates &) {
        if (!skip.count(name)) s += std::string("options.") + name + " = " + knob_source_text(member) + ";\n";
    });
    return s;
}

// The template's knobs: each one's current value (from `current`, the
// generator's params) first, then its candidates; `from_shape` holds those of
// the knobs listed with knob_from_shape.
template <typename Options>
std::vector<ScheduleKnob> schedule_knobs(const Options &current,
                                         const std::map<std::string, std::vector<int>> &from_shape = {}) {
    std::vector<ScheduleKnob> knobs;
    Options::visit_knobs(current, [&](const char *name, const auto &member, const KnobCandidates &c) {
        using T = std::decay_t<decltype(member)>;
        if constexpr (std::is_same_v<T, bool>) {
            // A bool knob the generator lists in from_shape with no values does nothing for this
            // shape (conv2d's share_* with pad > 0): only its current value, so no search repeats a plan.
            auto it = from_shape.find(name);
            if (it != from_shape.end() && it->second.empty()) {
                knobs.push_back(make_knob(name, std::string((bool)member ? "true" : "false"), {}));
            } else {
                knobs.push_back(make_knob(name, (bool)member));
            }
        } else if constexpr (std::is_same_v<T, int>) {
            if (c.kind == KnobCandidates::Kind::CoreCounts) {
                knobs.push_back(make_knob(name, usable_cores(member), core_count_candidates()));
            } else if (c.kind == KnobCandidates::Kind::FromShape) {
                auto it = from_shape.find(name);
                if (it == from_shape.end()) {
                    throw std::logic_error(std::string("schedule_knobs: no candidates given for knob '") + name + "'");
                }
                knobs.push_back(make_knob(name, (int)member, it->second));
            } else {
                knobs.push_back(make_knob(name, (int)member, c.ints));
            }
        } else {
            auto it = from_shape.find(name);
            const bool searched = it == from_shape.end() || !it->second.empty();
            knobs.push_back(make_knob(name, std::string(member), searched ? c.strings : std::vector<std::string>{}));
        }
    });
    return knobs;
}

}  // namespace spyre
