// Records and tables of the model runner (run_report.h).
#include "run_report.h"

#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "spyre/spyre_runtime.h"

namespace llm {

void RunRecorder::kernel_ran(const std::string &role, const std::string &function) {
    spyre_kernel_stats s{};
    if (spyre_get_last_run_stats(&s) != 0) return;
    OpRecord r;
    r.phase = phase_;
    r.layer = layer_;
    r.role = role;
    r.function = function;
    r.us = s.simulated_us;
    r.bound_us = s.roofline_bound_us;
    r.read_bytes = s.dram_read_bytes;
    r.write_bytes = s.dram_write_bytes;
    r.macs = s.macs;
    r.bottleneck = s.bottleneck;
    records_.push_back(r);
}

namespace {
spyre_kernel_stats copy_stats() {
    spyre_kernel_stats s{};
    if (spyre_get_kernel_stats("device->device", &s) != 0) s = spyre_kernel_stats{};
    return s;
}
}  // namespace

void RunRecorder::device_copies(const std::string &role, const std::function<void()> &op) {
    const spyre_kernel_stats before = copy_stats();
    op();
    const spyre_kernel_stats after = copy_stats();
    OpRecord r;
    r.phase = phase_;
    r.layer = layer_;
    r.role = role;
    r.function = "device->device";
    r.us = after.simulated_us - before.simulated_us;
    r.read_bytes = after.dram_read_bytes - before.dram_read_bytes;
    r.write_bytes = after.dram_write_bytes - before.dram_write_bytes;
    r.bound_us = r.us;  // a copy is its own DMA bound
    r.bottleneck = "dma";
    records_.push_back(r);
}

void RunRecorder::add(OpRecord r) {
    r.phase = phase_;
    r.layer = layer_;
    records_.push_back(std::move(r));
}

std::vector<OpRecord> RunRecorder::of_phase(const std::string &phase) const {
    std::vector<OpRecord> v;
    for (const OpRecord &r : records_) {
        if (r.phase == phase) v.push_back(r);
    }
    return v;
}

PhaseTotals totals(const std::vector<OpRecord> &records) {
    PhaseTotals t;
    for (const OpRecord &r : records) {
        t.us += r.us;
        t.bound_us += r.bound_us;
        t.read_bytes += r.read_bytes;
        t.write_bytes += r.write_bytes;
        t.macs += r.macs;
        t.ops++;
    }
    return t;
}

void print_phase_table(const std::vector<OpRecord> &records, const char *indent) {
    struct Row {
        int calls = 0;
        double us = 0, bound_us = 0;
        uint64_t bytes = 0;
        std::map<std::string, double> bottleneck_us;
    };
    std::vector<std::string> order;
    std::map<std::string, Row> rows;
    for (const OpRecord &r : records) {
        if (!rows.count(r.role)) order.push_back(r.role);
        Row &row = rows[r.role];
        row.calls++;
        row.us += r.us;
        row.bound_us += r.bound_us;
        row.bytes += r.read_bytes + r.write_bytes;
        row.bottleneck_us[r.bottleneck] += r.us;
    }
    const PhaseTotals t = totals(records);
    std::printf("%s%-16s %6s %12s %7s %12s %10s %7s  %s\n", indent, "kernel", "calls", "time_us", "share", "MB_moved",
                "bound_us", "%bound", "bottleneck");
    for (const std::string &role : order) {
        const Row &row = rows[role];
        std::string bottleneck;
        double best = -1;
        for (const auto &[name, us] : row.bottleneck_us) {
            if (us > best) best = us, bottleneck = name;
        }
        std::printf("%s%-16s %6d %12.1f %6.1f%% %12.2f %10.1f %6.1f%%  %s\n", indent, role.c_str(), row.calls, row.us,
                    t.us > 0 ? 100.0 * row.us / t.us : 0.0, row.bytes / 1e6, row.bound_us,
                    row.us > 0 ? 100.0 * row.bound_us / row.us : 0.0, bottleneck.c_str());
    }
    std::printf("%s%-16s %6d %12.1f %7s %12.2f %10.1f %6.1f%%\n", indent, "total", t.ops, t.us, "", 
                (t.read_bytes + t.write_bytes) / 1e6, t.bound_us, t.us > 0 ? 100.0 * t.bound_us / t.us : 0.0);
}

std::string chrome_trace(const std::vector<OpRecord> &records, const std::string &title) {
    nlohmann::json events = nlohmann::json::array();
    double ts = 0;
    std::map<int, bool> named;
    for (const OpRecord &r : records) {
        const int tid = r.layer + 1;  // 0: outside the layers
        if (!named[tid]) {
            named[tid] = true;
            events.push_back({{"ph", "M"}, {"pid", 0}, {"tid", tid}, {"name", "thread_name"},
                              {"args", {{"name", r.layer < 0 ? std::string("model") : "layer " + std::to_string(r.layer)}}}});
        }
        events.push_back({{"ph", "X"},
                          {"pid", 0},
                          {"tid", tid},
                          {"name", r.role},
                          {"cat", r.function == "device->device" ? "copy" : "kernel"},
                          {"ts", ts},
                          {"dur", r.us},
                          {"args",
                           {{"function", r.function},
                            {"bound_us", r.bound_us},
                            {"read_bytes", r.read_bytes},
                            {"write_bytes", r.write_bytes},
                            {"macs", r.macs},
                            {"bottleneck", r.bottleneck}}}});
        ts += r.us;
    }
    events.push_back({{"ph", "M"}, {"pid", 0}, {"name", "process_name"}, {"args", {{"name", title}}}});
    nlohmann::json doc{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
    return doc.dump(1);
}

}  // namespace llm
