// One core's scratchpad as the simulator sees it: the bytes, plus a "written"
// map for poison tracking (a read of a byte never written is a rule
// violation). Address checks throw RuleViolation; the scheduler adds the
// core/unit/instruction context.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "spyre/error.h"

namespace spyre {
namespace sim {

// A broken hardware rule, without context; the scheduler wraps it.
class RuleViolation : public Error {
public:
    explicit RuleViolation(const std::string &w) : Error(w) {}
};

class Scratchpad {
public:
    Scratchpad(int64_t bytes, bool functional, bool track_poison)
        : size_(bytes), functional_(functional), track_poison_(functional && track_poison) {
        if (functional_) data_.assign(bytes, 0);
        if (track_poison_) written_.assign(bytes, 0);
    }

    int64_t size() const { return size_; }
    uint8_t *data() { return data_.data(); }

    void check_bounds(int64_t addr, int64_t len, const char *what) const {
        if (addr < 0 || len < 0 || addr > size_ || len > size_ - addr) {
            throw RuleViolation(std::string(what) + " [" + std::to_string(addr) + ", " + std::to_string(addr + len) +
                                ") is outside the core's own " + std::to_string(size_) + "-byte scratchpad");
        }
    }
    // Bounds plus poison check for a read.
    void check_read(int64_t addr, int64_t len, const char *what) const {
        check_bounds(addr, len, what);
        if (!track_poison_ || len == 0) return;
        const void *hole = std::memchr(written_.data() + addr, 0, len);
        if (hole) {
            int64_t at = static_cast<const uint8_t *>(hole) - written_.data();
            throw RuleViolation(std::string(what) + " reads scratchpad byte " + std::to_string(at) +
                                " which was never written (uninitialised data)");
        }
    }
    void check_write(int64_t addr, int64_t len, const char *what) {
        check_bounds(addr, len, what);
        if (track_poison_ && len > 0) std::memset(written_.data() + addr, 1, len);
    }

private:
    int64_t size_;
    bool functional_;
    bool track_poison_;
    std::vector<uint8_t> data_;
    std::vector<uint8_t> written_;
};

}  // namespace sim
}  // namespace spyre
