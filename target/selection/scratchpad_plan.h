// Placement of scratchpad buffers (Halide Allocates stored in MemoryType::VTCM
// and the SFU's temporaries) in one core's scratchpad: first fit, stick
// aligned, released at Free. Records the peak footprint and what was live at
// the peak, so an over-budget schedule gets an error that lists the buffers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spyre {
namespace compiler {

// One buffer's place in a core's scratchpad, for as long as it was live.
struct ScratchpadPlacement {
    std::string name;
    int64_t address = 0;
    int64_t bytes = 0;
};

class ScratchpadPlan {
public:
    explicit ScratchpadPlan(int64_t alignment) : alignment_(alignment) {}

    int64_t allocate(const std::string &name, int64_t bytes);
    // Above every address used so far, so no buffer placed earlier overlaps it
    // (double-buffered copies are renamed by address; see double_buffering.h).
    int64_t allocate_above_peak(const std::string &name, int64_t bytes);
    void release(const std::string &name);
    bool is_live(const std::string &name) const { return live_.count(name) != 0; }

    int64_t peak_bytes() const { return peak_; }
    // "name (bytes), ..." of the buffers live when the peak was reached.
    std::string describe_peak() const { return peak_description_; }
    // Every placement made, in order (addresses are reused once a buffer is released).
    const std::vector<ScratchpadPlacement> &placements() const { return placements_; }

private:
    void note_peak();  // after an allocation: a new peak records what is live

    int64_t alignment_;
    std::map<std::string, std::pair<int64_t, int64_t>> live_;  // name -> (address, bytes)
    std::vector<ScratchpadPlacement> placements_;
    int64_t peak_ = 0;
    std::string peak_description_;
};

}  // namespace compiler
}  // namespace spyre
