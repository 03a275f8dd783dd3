// Derived performance figures, the text summary and the JSON report.
#include "spyre/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

namespace spyre {

double dram_time_ns(double r, double w, const MachineDescription &m) {
    return m.dram_bound_ns(r, w);
}

PerformanceFigures performance_figures(const SimulationResult &r, const MachineDescription &m) {
    PerformanceFigures f;
    // Every core's PT at the datasheet peak of each matmul's type (fp32 at pt_fp32_rate_factor).
    f.compute_bound_us = r.pt_peak_cycles / (m.cores * m.clock_ghz) / 1000.0;
    f.dram_bound_us = dram_time_ns((double)r.dram_read_bytes, (double)r.dram_write_bytes, m) / 1000.0;
    f.roofline_bound_us = std::max(f.compute_bound_us, f.dram_bound_us);
    f.argument_bound_us = std::max(
        f.compute_bound_us, dram_time_ns((double)r.argument_input_bytes, (double)r.argument_output_bytes, m) / 1000.0);
    const double sustained_compute_us =
        r.pt_peak_cycles * (m.pt_peak_macs_per_cycle_fp16 / m.pt_macs_per_cycle(1.0)) / (m.cores * m.clock_ghz) / 1000.0;
    const double argument_dram_us =
        m.dram_cycles((double)r.argument_input_bytes, (double)r.argument_output_bytes, (double)m.cores) / m.clock_ghz / 1000.0;
    f.calibrated_floor_us = std::max(sustained_compute_us, argument_dram_us);
    if (r.cycles > 0) {
        f.pt_utilization = r.macs / (r.cycles * m.pt_peak_macs_per_cycle_fp16 * m.cores);
        f.pt_sustained_utilization = r.macs / (r.cycles * m.pt_macs_per_cycle(1.0) * m.cores);
        f.achieved_dram_gbps = (r.dram_read_bytes + r.dram_write_bytes) / (r.simulated_us * 1000.0);
    }
    double max_core_busy = 0, sum_core_busy = 0;
    for (const auto &c : r.cores) {
        double busy = 0;
        for (int u = 0; u < isa::kNumUnits; u++) {
            busy = std::max(busy, c.unit[u].busy_cycles);
            if (r.cycles > 0) f.unit_utilization[u] += c.unit[u].busy_cycles / r.cycles / r.cores.size();
        }
        if (busy > 0) f.active_cores++;
        max_core_busy = std::max(max_core_busy, busy);
        sum_core_busy += busy;
    }
    const double mean_active = f.active_cores ? sum_core_busy / f.active_cores : 0;
    // Bottleneck: the dominating resource, judged on the busiest unit kind of active cores.
    double active_scale = f.active_cores ? (double)r.cores.size() / f.active_cores : 0;
    const double dma = f.unit_utilization[(int)isa::Unit::Dma] * active_scale;
    const double pt = f.unit_utilization[(int)isa::Unit::Pt] * active_scale;
    const double sfu = f.unit_utilization[(int)isa::Unit::Sfu] * active_scale;
    if (r.cycles <= 0) {
        f.bottleneck = "none";
    } else if (mean_active > 0 && max_core_busy > 1.5 * mean_active) {
        f.bottleneck = "imbalance";
    } else if (f.dram_bound_us > 0.6 * r.simulated_us || (dma >= pt && dma >= sfu && dma > 0.6)) {
        f.bottleneck = "dram";
    } else if (pt >= sfu && pt > 0.6) {
        f.bottleneck = "compute";
    } else if (sfu > 0.6) {
        f.bottleneck = "scratchpad";
    } else {
        f.bottleneck = "sync";
    }
    return f;
}

std::string format_summary(const SimulationResult &r, const MachineDescription &m) {
    const PerformanceFigures f = performance_figures(r, m);
    std::ostringstream os;
    char line[256];
    std::snprintf(line, sizeof line, "kernel %s on %s (%d of %lld cores active)\n", r.kernel.c_str(), m.name.c_str(),
                  f.active_cores, (long long)m.cores);
    os << line;
    std::snprintf(line, sizeof line, "  simulated time   %12.3f us  (%.0f cycles at %.2f GHz)\n", r.simulated_us, r.cycles,
                  m.clock_ghz);
    os << line;
    std::snprintf(line, sizeof line, "  roofline bound   %12.3f us  (compute %.3f us, DRAM %.3f us) -> %.1f%% of bound\n",
                  f.roofline_bound_us, f.compute_bound_us, f.dram_bound_us,
                  r.simulated_us > 0 ? 100.0 * f.roofline_bound_us / r.simulated_us : 0.0);
    os << line;
    std::snprintf(line, sizeof line, "  arguments bound  %12.3f us  (each input read and each output written once) -> %.1f%% of it\n",
                  f.argument_bound_us, r.simulated_us > 0 ? 100.0 * f.argument_bound_us / r.simulated_us : 0.0);
    os << line;
    std::snprintf(line, sizeof line, "  calibrated floor %12.3f us  (sustained PT rate, arguments once at the calibrated DRAM rate) -> %.1f%% of it\n",
                  f.calibrated_floor_us, r.simulated_us > 0 ? 100.0 * f.calibrated_floor_us / r.simulated_us : 0.0);
    os << line;
    std::snprintf(line, sizeof line, "  MACs             %12llu  PT utilization %.1f%% of the datasheet peak, %.1f%% of the sustained peak\n",
                  (unsigned long long)r.macs, 100.0 * f.pt_utilization, 100.0 * f.pt_sustained_utilization);
    os << line;
    std::snprintf(line, sizeof line, "  DRAM             %12llu B read, %llu B written  (%.1f GB/s)\n",
                  (unsigned long long)r.dram_read_bytes, (unsigned long long)r.dram_write_bytes, f.achieved_dram_gbps);
    os << line;
    std::snprintf(line, sizeof line, "  unit utilization DMA %.1f%%  PT %.1f%%  SFU %.1f%% (mean over all cores)\n",
                  100 * f.unit_utilization[0], 100 * f.unit_utilization[1], 100 * f.unit_utilization[2]);
    os << line;
    std::snprintf(line, sizeof line, "  bottleneck       %s; %llu instructions executed\n", f.bottleneck.c_str(),
                  (unsigned long long)r.dynamic_instructions);
    os << line;
    return os.str();
}

std::string report_json(const SimulationResult &r, const MachineDescription &m) {
    const PerformanceFigures f = performance_figures(r, m);
    nlohmann::json j;
    j["schema"] = "spyre-report-1";
    j["kernel"] = r.kernel;
    char fp[32];
    std::snprintf(fp, sizeof fp, "0x%016llx", (unsigned long long)m.structural_fingerprint());
    j["machine"] = {{"name", m.name}, {"fingerprint", fp}, {"clock_ghz", m.clock_ghz}, {"cores", m.cores}};
    j["cycles"] = r.cycles;
    j["simulated_us"] = r.simulated_us;
    j["macs"] = r.macs;
    j["dram_read_bytes"] = r.dram_read_bytes;
    j["dram_write_bytes"] = r.dram_write_bytes;
    j["ring_bytes"] = r.ring_bytes;
    j["dynamic_instructions"] = r.dynamic_instructions;
    j["roofline_bound_us"] = f.roofline_bound_us;
    j["compute_bound_us"] = f.compute_bound_us;
    j["dram_bound_us"] = f.dram_bound_us;
    j["argument_input_bytes"] = r.argument_input_bytes;
    j["argument_output_bytes"] = r.argument_output_bytes;
    j["argument_bound_us"] = f.argument_bound_us;
    j["calibrated_floor_us"] = f.calibrated_floor_us;
    j["pt_utilization"] = f.pt_utilization;
    j["pt_sustained_utilization"] = f.pt_sustained_utilization;
    j["achieved_dram_gbps"] = f.achieved_dram_gbps;
    j["active_cores"] = f.active_cores;
    j["bottleneck"] = f.bottleneck;
    nlohmann::json cores = nlohmann::json::array();
    for (size_t c = 0; c < r.cores.size(); c++) {
        nlohmann::json cj;
        cj["core"] = c;
        for (int u = 0; u < isa::kNumUnits; u++) {
            const UnitStats &s = r.cores[c].unit[u];
            cj[isa::unit_name((isa::Unit)u)] = {{"busy_cycles", s.busy_cycles},
                                                {"utilization", r.cycles > 0 ? s.busy_cycles / r.cycles : 0.0},
                                                {"instructions", s.instructions}};
        }
        cores.push_back(cj);
    }
    j["cores"] = cores;
    return j.dump(2);
}

}  // namespace spyre
