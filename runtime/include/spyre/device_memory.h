// Simulated device DRAM: a capacity-limited allocator over host memory.
// Allocations are backed by anonymous mappings, so untouched bytes cost no
// host memory and read as zero. Exhausting the device's capacity (or the
// host's memory backing it) is an Error naming the requested and free sizes.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace spyre {

class DeviceMemory {
public:
    explicit DeviceMemory(int64_t capacity_bytes);
    ~DeviceMemory();
    DeviceMemory(const DeviceMemory &) = delete;
    DeviceMemory &operator=(const DeviceMemory &) = delete;

    // Returns a non-zero handle. Throws spyre::Error when the device is full.
    uint64_t allocate(int64_t bytes, const std::string &tag);
    // Throws spyre::Error for an unknown or already freed handle.
    void free(uint64_t handle);

    uint8_t *data(uint64_t handle) const;
    int64_t size(uint64_t handle) const;
    bool contains(uint64_t handle) const;

    int64_t capacity() const { return capacity_; }
    int64_t used() const;
    int64_t free_bytes() const { return capacity_ - used(); }

private:
    struct Allocation {
        uint8_t *ptr;
        int64_t bytes;
        int64_t mapped;
        std::string tag;
    };
    int64_t capacity_;
    int64_t used_ = 0;
    uint64_t next_handle_ = 1;
    std::map<uint64_t, Allocation> allocations_;
    mutable std::mutex mutex_;
};

}  // namespace spyre
