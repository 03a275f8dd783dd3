// The timing-only switch (spyre_set_timing_only / spyre_timing_only in
// spyre_runtime.h, SPYRE_TIMING_ONLY=1 in the environment at first use).
//
// While it is on, kernel calls run only the simulator's timing phase (as
// `spyre-run --timing-only`), and host<->device and device->device copies are
// charged in the profile but move no bytes; everything they write is marked
// as holding no values (DeviceBlock::holds_values), so a later read fails
// instead of returning garbage. Process-wide; assumes callers switch modes
// between kernel calls, not during one (a call reads the mode once).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "device_state.h"

namespace spyre {

namespace {
// -1: not decided yet (SPYRE_TIMING_ONLY is read at first use), else 0 / 1.
std::atomic<int> g_timing_only{-1};
}  // namespace

bool timing_only() {
    int v = g_timing_only.load();
    if (v < 0) {
        const char *s = std::getenv("SPYRE_TIMING_ONLY");
        const int from_env = (s != nullptr && std::strcmp(s, "1") == 0) ? 1 : 0;
        g_timing_only.compare_exchange_strong(v, from_env);
        v = g_timing_only.load();
    }
    return v == 1;
}

void set_timing_only(bool enabled) { g_timing_only.store(enabled ? 1 : 0); }

}  // namespace spyre

extern "C" {

int spyre_set_timing_only(int enabled) {
    const int previous = spyre::timing_only() ? 1 : 0;
    spyre::set_timing_only(enabled != 0);
    return previous;
}

int spyre_timing_only(void) { return spyre::timing_only() ? 1 : 0; }

}  // extern "C"
