// The registry of schedule templates (see schedule_template.h).
#include "schedule_template.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>

namespace spyre {
namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, ScheduleTemplate> templates;
};

Registry &registry() {
    static Registry r;
    return r;
}

}  // namespace

ScheduleKnob make_knob(const std::string &name, const std::string &current, const std::vector<std::string> &candidates) {
    ScheduleKnob k{name, {current}};
    for (const std::string &c : candidates) {
        if (std::find(k.values.begin(), k.values.end(), c) == k.values.end()) k.values.push_back(c);
    }
    return k;
}

ScheduleKnob make_knob(const std::string &name, int current, const std::vector<int> &candidates) {
    std::vector<std::string> c;
    for (int v : candidates) c.push_back(std::to_string(v));
    return make_knob(name, std::to_string(current), c);
}

ScheduleKnob make_knob(const std::string &name, bool current) {
    return make_knob(name, current ? "true" : "false", {current ? "false" : "true"});
}

int knob_int(const KnobValues &v, const std::string &name) {
    auto it = v.find(name);
    if (it == v.end()) throw std::invalid_argument("schedule template: knob '" + name + "' has no value");
    size_t used = 0;
    const int x = std::stoi(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("schedule template: knob '" + name + "' is not an integer: '" + it->second + "'");
    return x;
}

bool knob_bool(const KnobValues &v, const std::string &name) {
    auto it = v.find(name);
    if (it == v.end()) throw std::invalid_argument("schedule template: knob '" + name + "' has no value");
    if (it->second == "true" || it->second == "1") return true;
    if (it->second == "false" || it->second == "0") return false;
    throw std::invalid_argument("schedule template: knob '" + name + "' is not true or false: '" + it->second + "'");
}

KnobValues default_knob_values(const ScheduleTemplate &t) {
    KnobValues v;
    for (const ScheduleKnob &k : t.knobs) {
        if (!k.values.empty()) v[k.name] = k.values.front();
    }
    return v;
}

std::string knob_string(const ScheduleTemplate &t, const KnobValues &v) {
    std::string s;
    for (const ScheduleKnob &k : t.knobs) {
        auto it = v.find(k.name);
        if (it == v.end()) continue;
        s += (s.empty() ? "" : " ") + k.name + "=" + it->second;
    }
    return s;
}

void register_schedule_template(ScheduleTemplate t) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const std::string key = t.output;
    r.templates[key] = std::move(t);
}

const ScheduleTemplate *find_schedule_template(const std::string &output) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.templates.find(output);
    return it == r.templates.end() ? nullptr : &it->second;
}

std::vector<std::string> schedule_template_outputs() {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<std::string> names;
    for (const auto &kv : r.templates) names.push_back(kv.first);
    return names;
}

}  // namespace spyre
