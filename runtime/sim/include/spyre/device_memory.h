// Simulated device DRAM: a capacity-limited allocator over host memory.
// Allocations are backed by anonymous mappings; every allocation reads as
// zero when handed out. Exhausting the device's capacity (or the host's
// memory backing it) is an Error naming the requested and free sizes.
//
// Pooling: sizes are rounded up to a size class (whole 4 KiB pages; above 16
// pages, steps of 1/8 of the power of two below the size). A freed block of
// at most kMaxPooledBlockBytes goes to a per-class pool (unless the pool would
// then hold more than pool_limit_bytes) and is handed out again, zeroed, to
// the next allocation of the same class, sparing the map/unmap and page
// faults. Device capacity counts live blocks at their class size; pooled
// blocks count as free device memory (they only cache host mappings) and
// are released whenever an allocation needs their host memory or on
// release_pool(). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace spyre {

class DeviceMemory {
public:
    static constexpr int64_t kMaxPooledBlockBytes = int64_t(64) << 20;
    static constexpr int64_t kDefaultPoolLimitBytes = int64_t(256) << 20;

    explicit DeviceMemory(int64_t capacity_bytes, int64_t pool_limit_bytes = kDefaultPoolLimitBytes);
    ~DeviceMemory();
    DeviceMemory(const DeviceMemory &) = delete;
    DeviceMemory &operator=(const DeviceMemory &) = delete;

    // Returns a non-zero handle (never reused). Throws spyre::Error when the device is full.
    // use_pool = false: always a fresh (untouched, zero) mapping, never a pooled block that
    // would have to be zeroed (so an allocation nothing writes costs no host memory).
    uint64_t allocate(int64_t bytes, const std::string &tag, bool use_pool = true);
    // Throws spyre::Error for an unknown or already freed handle.
    void free(uint64_t handle);

    uint8_t *data(uint64_t handle) const;
    int64_t size(uint64_t handle) const;  // the requested size
    bool contains(uint64_t handle) const;

    int64_t capacity() const { return capacity_; }
    int64_t used() const;  // live blocks at their class size
    int64_t free_bytes() const { return capacity_ - used(); }

    // The class size an allocation of `bytes` occupies.
    static int64_t size_class(int64_t bytes);

    // Pool statistics and control.
    int64_t pooled_bytes() const;
    uint64_t pool_reuses() const;  // allocations served from the pool so far
    void release_pool();

private:
    struct Allocation {
        uint8_t *ptr;
        int64_t bytes;   // requested
        int64_t mapped;  // class size
        std::string tag;
    };
    void release_pool_locked();

    int64_t capacity_;
    int64_t pool_limit_;
    int64_t used_ = 0;
    int64_t pooled_ = 0;
    uint64_t reuses_ = 0;
    uint64_t next_handle_ = 1;
    std::map<uint64_t, Allocation> allocations_;
    std::map<int64_t, std::vector<uint8_t *>> pool_;  // class size -> free blocks
    mutable std::mutex mutex_;
};

}  // namespace spyre
