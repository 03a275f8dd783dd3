// What the model runner measured: one record per device operation (kernel
// call or device copy) of the chain, tagged with its phase and layer, read
// from the runtime's figures of that operation; and the tables printed from
// them (per phase, per kernel role: calls, simulated time, bytes, bound,
// bottleneck), plus a Chrome trace of one phase (one event per operation on
// a simulated-time axis).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace llm {

struct OpRecord {
    std::string phase;     // "prefill", "decode step 3", ...
    int layer = -1;        // -1: outside the layers (embedding, final norm, LM head)
    std::string role;      // the chain's name: "qkv", "attention", "kv append", ...
    std::string function;  // the generated kernel ("granite8b_d1_qkv") or "device->device"
    double us = 0, bound_us = 0;
    uint64_t read_bytes = 0, write_bytes = 0, macs = 0;
    std::string bottleneck;
};

class RunRecorder {
public:
    void set_phase(const std::string &phase) { phase_ = phase; }
    void set_layer(int layer) { layer_ = layer; }
    const std::string &phase() const { return phase_; }

    // Records the kernel run that just finished (spyre_get_last_run_stats).
    void kernel_ran(const std::string &role, const std::string &function);
    // Runs `op` (device copies) and records what it added to the "device->device" profile entry.
    void device_copies(const std::string &role, const std::function<void()> &op);

    // Adds a record made by the caller (tagged with the current phase and layer).
    void add(OpRecord r);

    const std::vector<OpRecord> &records() const { return records_; }
    std::vector<OpRecord> of_phase(const std::string &phase) const;

private:
    std::string phase_;
    int layer_ = -1;
    std::vector<OpRecord> records_;
};

struct PhaseTotals {
    double us = 0, bound_us = 0;
    uint64_t read_bytes = 0, write_bytes = 0, macs = 0;
    int ops = 0;
};
PhaseTotals totals(const std::vector<OpRecord> &records);

// The per-role table of one phase (roles in chain order).
void print_phase_table(const std::vector<OpRecord> &records, const char *indent);

// Chrome Trace Event Format: one complete event per record, back to back on
// one simulated-time axis (the device runs one operation at a time), grouped
// by layer as threads. Returns the JSON text.
std::string chrome_trace(const std::vector<OpRecord> &records, const std::string &title);

}  // namespace llm
