// Chrome trace JSON and the SVG timeline of a simulated run.
#include "spyre/trace_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "spyre/report.h"

namespace spyre {
namespace {

using Json = nlohmann::ordered_json;

double cycles_to_us(double cycles, const MachineDescription &m) { return cycles / (m.clock_ghz * 1000.0); }

const char *unit_label(int unit) { return isa::unit_name(static_cast<isa::Unit>(unit)); }

// Cores with at least one trace event, ascending.
std::vector<int> cores_with_events(const SimulationResult &r) {
    std::vector<bool> seen;
    for (const TraceEvent &e : r.trace) {
        if (e.core >= (int)seen.size()) seen.resize(e.core + 1, false);
        seen[e.core] = true;
    }
    std::vector<int> cores;
    for (int c = 0; c < (int)seen.size(); c++) {
        if (seen[c]) cores.push_back(c);
    }
    return cores;
}

Json metadata_event(const char *name, int pid, int tid, Json args) {
    return Json{{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// ---- SVG ----

std::string format(const char *fmt, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

std::string xml_escaped(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

// Colors live in the style sheet only: every element names a class.
const char *const kStyleSheet =
    "text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:11px;fill:#222}"
    ".title{font-size:16px;font-weight:bold}.subtitle{font-size:12px;fill:#444}.note{font-size:10px;fill:#666}"
    ".dma{fill:#4e79a7}.pt{fill:#e15759}.sfu{fill:#59a14f}"
    ".band{fill:#f2f2f2}.frame{fill:none;stroke:#999}.grid{stroke:#dcdcdc}.axis{stroke:#444}";

// Writes SVG elements; coordinates in px with one decimal.
class SvgDocument {
public:
    SvgDocument(double width, double height) {
        os_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
            << "\" viewBox=\"0 0 " << width << " " << height << "\">\n<style>" << kStyleSheet << "</style>\n";
        os_ << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    }

    void rect(double x, double y, double w, double h, const char *cls) {
        os_ << "<rect class=\"" << cls << "\" x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w)
            << "\" height=\"" << num(h) << "\"/>\n";
    }
    void line(double x0, double y0, double x1, double y1, const char *cls) {
        os_ << "<line class=\"" << cls << "\" x1=\"" << num(x0) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(x1)
            << "\" y2=\"" << num(y1) << "\"/>\n";
    }
    // anchor: start, middle or end.
    void text(double x, double y, const std::string &s, const char *cls = nullptr, const char *anchor = "start") {
        os_ << "<text";
        if (cls) os_ << " class=\"" << cls << "\"";
        os_ << " x=\"" << num(x) << "\" y=\"" << num(y) << "\"";
        if (std::string(anchor) != "start") os_ << " text-anchor=\"" << anchor << "\"";
        os_ << ">" << xml_escaped(s) << "</text>\n";
    }

    std::string finish() {
        os_ << "</svg>\n";
        return os_.str();
    }

private:
    static std::string num(double v) { return format("%.1f", v); }
    std::ostringstream os_;
};

// Picture geometry in px.
constexpr double kWidth = 1200;
constexpr double kPlotLeft = 72, kPlotRight = 1010;
constexpr double kPlotWidth = kPlotRight - kPlotLeft;
constexpr double kLaneHeight = 6, kLaneGap = 1, kRowGap = 7;
constexpr double kRowHeight = isa::kNumUnits * kLaneHeight + (isa::kNumUnits - 1) * kLaneGap + kRowGap;
constexpr double kRowsTop = 92;
constexpr double kBusyColumnRight[isa::kNumUnits] = {1065, 1120, 1175};  // right edges of the busy % columns
constexpr double kMinRectWidth = 1.0;   // so a lone short instruction stays visible
constexpr double kInitialMergePx = 0.5;

struct PixelSpan {
    double x0, x1;
};
using Lanes = std::vector<std::vector<PixelSpan>>;  // [row * kNumUnits + unit], sorted by x0

// Joins neighbours of each lane whose gap is at most tolerance px.
Lanes merged(const Lanes &lanes, double tolerance) {
    Lanes out(lanes.size());
    for (size_t l = 0; l < lanes.size(); l++) {
        for (const PixelSpan &s : lanes[l]) {
            if (!out[l].empty() && s.x0 <= out[l].back().x1 + tolerance) {
                out[l].back().x1 = std::max(out[l].back().x1, s.x1);
            } else {
                out[l].push_back(s);
            }
        }
    }
    return out;
}

size_t span_count(const Lanes &lanes) {
    size_t n = 0;
    for (const auto &l : lanes) n += l.size();
    return n;
}

// Merges with 0.5 px, then coarsens (doubling the tolerance; merged spans are
// further apart than the last tolerance, so merging them again equals merging
// the originals) until at most kTimelineMaxIntervalRects remain.
Lanes drawable_spans(const Lanes &lanes) {
    double tolerance = kInitialMergePx;
    Lanes spans = merged(lanes, tolerance);
    while (span_count(spans) > (size_t)kTimelineMaxIntervalRects) {
        tolerance *= 2;
        spans = merged(spans, tolerance);
    }
    return spans;
}

// The round step (1, 2 or 5 times a power of ten) giving closest to `target` ticks over span.
double tick_step(double span, int target) {
    const double decade = std::pow(10.0, std::floor(std::log10(span / target)));
    double best = decade;
    for (double f : {2.0, 5.0, 10.0}) {
        if (std::fabs(span / (f * decade) - target) < std::fabs(span / best - target)) best = f * decade;
    }
    return best;
}

std::string tick_label(double value, double step) {
    const int decimals = std::max(0, (int)-std::floor(std::log10(step) + 1e-9));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return buf;
}

std::string percent(double fraction) { return format("%.1f%%", 100.0 * fraction); }

}  // namespace

std::string chrome_trace_json(const SimulationResult &r, const MachineDescription &m) {
    std::ostringstream os;
    write_chrome_trace(os, r, m);
    return os.str();
}

void write_chrome_trace(std::ostream &os, const SimulationResult &r, const MachineDescription &m) {
    // Streamed one event at a time (each dumped by nlohmann, so the text is
    // valid JSON) to keep memory small for traces of millions of events.
    os << "{\"traceEvents\":[";
    bool first = true;
    auto emit = [&](const Json &event) {
        os << (first ? "\n" : ",\n") << event.dump();
        first = false;
    };
    for (int core : cores_with_events(r)) {
        emit(metadata_event("process_name", core, 0, {{"name", "core " + std::to_string(core)}}));
        emit(metadata_event("process_sort_index", core, 0, {{"sort_index", core}}));
        for (int u = 0; u < isa::kNumUnits; u++) {
            emit(metadata_event("thread_name", core, u, {{"name", unit_label(u)}}));
            emit(metadata_event("thread_sort_index", core, u, {{"sort_index", u}}));
        }
    }
    for (const TraceEvent &e : r.trace) {
        emit(Json{{"name", isa::opcode_spec(e.op).mnemonic},
                  {"cat", unit_label(e.unit)},
                  {"ph", "X"},
                  {"pid", e.core},
                  {"tid", e.unit},
                  {"ts", cycles_to_us(e.start_cycle, m)},
                  {"dur", cycles_to_us(e.end_cycle - e.start_cycle, m)},
                  {"args", {{"start_cycle", e.start_cycle}, {"end_cycle", e.end_cycle}}}});
    }
    const Json other{{"kernel", r.kernel},           {"machine", m.name},
                     {"clock_ghz", m.clock_ghz},     {"cycles", r.cycles},
                     {"simulated_us", r.simulated_us}, {"trace_events", r.trace.size()},
                     {"trace_events_dropped", r.trace_events_dropped}};
    os << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":" << other.dump() << "}\n";
}

std::string timeline_svg(const SimulationResult &r, const MachineDescription &m, int max_cores) {
    const PerformanceFigures f = performance_figures(r, m);
    const std::vector<int> active = cores_with_events(r);
    const int rows = std::min<int>((int)active.size(), std::max(0, max_cores));
    std::vector<int> row_of_core(active.empty() ? 0 : active.back() + 1, -1);
    for (int i = 0; i < rows; i++) row_of_core[active[i]] = i;

    double span_cycles = r.cycles;
    for (const TraceEvent &e : r.trace) span_cycles = std::max(span_cycles, e.end_cycle);
    if (span_cycles <= 0) span_cycles = 1;
    const double px_per_cycle = kPlotWidth / span_cycles;

    // Busy intervals in px and busy cycles of each drawn lane.
    Lanes lanes(rows * isa::kNumUnits);
    std::vector<double> busy_cycles(lanes.size(), 0.0);
    for (const TraceEvent &e : r.trace) {
        const int row = row_of_core[e.core];
        if (row < 0 || e.unit < 0 || e.unit >= isa::kNumUnits) continue;
        const size_t lane = row * isa::kNumUnits + e.unit;
        lanes[lane].push_back({e.start_cycle * px_per_cycle, e.end_cycle * px_per_cycle});
        busy_cycles[lane] += e.end_cycle - e.start_cycle;
    }
    for (auto &l : lanes) std::sort(l.begin(), l.end(), [](const PixelSpan &a, const PixelSpan &b) { return a.x0 < b.x0; });
    const Lanes spans = drawable_spans(lanes);

    const double rows_bottom = kRowsTop + std::max(rows, 1) * kRowHeight;
    const double axis_y = rows_bottom + 2;
    const double height = axis_y + 62;
    SvgDocument svg(kWidth, height);

    // Title, subtitle, legend.
    char line[512];
    std::snprintf(line, sizeof line, "%s: %.3f us simulated (%.0f cycles at %.2f GHz) on %s", r.kernel.c_str(),
                  r.simulated_us, r.cycles, m.clock_ghz, m.name.c_str());
    svg.text(kPlotLeft, 24, line, "title");
    std::snprintf(line, sizeof line,
                  "PT utilization %s  |  bottleneck: %s  |  %d of %lld cores active  |  mean busy DMA %s, PT %s, SFU %s",
                  percent(f.pt_utilization).c_str(), f.bottleneck.c_str(), (int)active.size(), (long long)m.cores,
                  percent(f.unit_utilization[0]).c_str(), percent(f.unit_utilization[1]).c_str(),
                  percent(f.unit_utilization[2]).c_str());
    svg.text(kPlotLeft, 44, line, "subtitle");
    const char *const legend[isa::kNumUnits] = {"DMA (dma.load, dma.store, ring.put)", "PT (pt.matmul)", "SFU (sfu.*)"};
    double x = kPlotLeft;
    for (int u = 0; u < isa::kNumUnits; u++) {
        svg.rect(x, 58, 12, 10, (std::string(unit_label(u)) + " legend").c_str());
        svg.text(x + 17, 67, legend[u]);
        x += 17 + 6.2 * std::string(legend[u]).size() + 22;  // about 6.2 px per character
    }
    svg.text(x, 67, "lanes top to bottom in each core row: DMA, PT, SFU", "note");
    svg.text(kBusyColumnRight[isa::kNumUnits - 1], 67, "busy % of run", "note", "end");
    for (int u = 0; u < isa::kNumUnits; u++) {
        std::string name = unit_label(u);
        std::transform(name.begin(), name.end(), name.begin(), ::toupper);
        svg.text(kBusyColumnRight[u], kRowsTop - 6, name, unit_label(u), "end");
    }

    // Row bands and labels, then the time grid over them.
    for (int i = 0; i < rows; i++) {
        const double y = kRowsTop + i * kRowHeight;
        if (i % 2 == 0) svg.rect(kPlotLeft, y - kRowGap / 2, kPlotWidth, kRowHeight, "band");
        svg.text(kPlotLeft - 8, y + (kRowHeight - kRowGap) / 2 + 4, "core " + std::to_string(active[i]), nullptr, "end");
    }
    const double span_us = cycles_to_us(span_cycles, m);
    const double step = tick_step(span_us, 8);
    for (int k = 0; k * step <= span_us * (1 + 1e-9); k++) {
        const double tx = kPlotLeft + k * step / span_us * kPlotWidth;
        svg.line(tx, kRowsTop - kRowGap / 2, tx, axis_y, "grid");
        svg.line(tx, axis_y, tx, axis_y + 5, "axis");
        svg.text(tx, axis_y + 18, tick_label(k * step, step), nullptr, "middle");
    }
    svg.line(kPlotLeft, axis_y, kPlotRight, axis_y, "axis");
    svg.text((kPlotLeft + kPlotRight) / 2, axis_y + 36, "time (us)", nullptr, "middle");
    if (r.trace.empty()) {
        svg.text(kPlotLeft + 10, kRowsTop + 12, "no trace recorded: run with SimulationOptions::record_trace", "note");
    }
    if ((int)active.size() > rows) {
        svg.text(kPlotLeft, axis_y + 52,
                 std::to_string(active.size() - rows) + " more active cores not shown (max_cores = " +
                     std::to_string(max_cores) + ")",
                 "note");
    }

    // Busy intervals and per-core busy %.
    for (int i = 0; i < rows; i++) {
        const double row_y = kRowsTop + i * kRowHeight;
        for (int u = 0; u < isa::kNumUnits; u++) {
            const size_t lane = i * isa::kNumUnits + u;
            const double y = row_y + u * (kLaneHeight + kLaneGap);
            for (const PixelSpan &s : spans[lane]) {
                svg.rect(kPlotLeft + s.x0, y, std::max(s.x1 - s.x0, kMinRectWidth), kLaneHeight, unit_label(u));
            }
            svg.text(kBusyColumnRight[u], row_y + (kRowHeight - kRowGap) / 2 + 4,
                     percent(r.cycles > 0 ? busy_cycles[lane] / r.cycles : 0.0), unit_label(u), "end");
        }
    }
    return svg.finish();
}

}  // namespace spyre
