// Simulated device DRAM allocator with size-class pooling (see device_memory.h).
#include "spyre/device_memory.h"

#include <sys/mman.h>

#include <cstring>

#include "spyre/error.h"

namespace spyre {

namespace {
constexpr int64_t kPage = 4096;
}

DeviceMemory::DeviceMemory(int64_t capacity_bytes, int64_t pool_limit_bytes)
    : capacity_(capacity_bytes), pool_limit_(pool_limit_bytes < 0 ? 0 : pool_limit_bytes) {}

DeviceMemory::~DeviceMemory() {
    for (auto &kv : allocations_) munmap(kv.second.ptr, kv.second.mapped);
    release_pool_locked();
}

int64_t DeviceMemory::size_class(int64_t bytes) {
    const int64_t pages = (bytes + kPage - 1) / kPage;
    if (pages <= 16) return pages * kPage;
    int64_t top = 1;
    while (top * 2 <= pages) top *= 2;
    const int64_t step = top / 8;
    return (pages + step - 1) / step * step * kPage;
}

uint64_t DeviceMemory::allocate(int64_t bytes, const std::string &tag, bool use_pool) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes <= 0) throw Error("device allocation of " + std::to_string(bytes) + " bytes for '" + tag + "': size must be positive");
    // Very large requests skip the size classes, so rounding never makes a request fail that fits.
    const int64_t cls = bytes <= kMaxPooledBlockBytes ? size_class(bytes) : (bytes + kPage - 1) / kPage * kPage;
    if (cls > capacity_ - used_) {
        throw Error("device memory exhausted: '" + tag + "' requested " + std::to_string(bytes) + " bytes, " +
                    std::to_string(capacity_ - used_) + " of " + std::to_string(capacity_) + " bytes are free");
    }
    uint8_t *ptr = nullptr;
    auto pooled = pool_.find(cls);
    if (use_pool && pooled != pool_.end() && !pooled->second.empty()) {
        ptr = pooled->second.back();
        pooled->second.pop_back();
        pooled_ -= cls;
        reuses_++;
        std::memset(ptr, 0, (size_t)bytes);  // fresh allocations read as zero, pooled or not
    } else {
        void *p = mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED && pooled_ > 0) {
            release_pool_locked();  // give the host its memory back and try once more
            p = mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        }
        if (p == MAP_FAILED) {
            throw Error("device memory exhausted: the host could not back '" + tag + "' (" + std::to_string(bytes) +
                        " bytes) of simulated device memory");
        }
        ptr = static_cast<uint8_t *>(p);
    }
    const uint64_t h = next_handle_++;
    allocations_[h] = Allocation{ptr, bytes, cls, tag};
    used_ += cls;
    return h;
}

void DeviceMemory::free(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(handle);
    if (it == allocations_.end()) throw Error("device free of unknown or already freed allocation " + std::to_string(handle));
    const Allocation &a = it->second;
    if (a.mapped <= kMaxPooledBlockBytes && pooled_ + a.mapped <= pool_limit_) {
        pool_[a.mapped].push_back(a.ptr);
        pooled_ += a.mapped;
    } else {
        munmap(a.ptr, a.mapped);
    }
    used_ -= a.mapped;
    allocations_.erase(it);
}

uint8_t *DeviceMemory::data(uint64_t handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(handle);
    if (it == allocations_.end()) throw Error("use of unknown or freed device allocation " + std::to_string(handle));
    return it->second.ptr;
}

int64_t DeviceMemory::size(uint64_t handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(handle);
    if (it == allocations_.end()) throw Error("use of unknown or freed device allocation " + std::to_string(handle));
    return it->second.bytes;
}

bool DeviceMemory::contains(uint64_t handle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocations_.count(handle) != 0;
}

int64_t DeviceMemory::used() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
}

int64_t DeviceMemory::pooled_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pooled_;
}

uint64_t DeviceMemory::pool_reuses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reuses_;
}

void DeviceMemory::release_pool() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_pool_locked();
}

void DeviceMemory::release_pool_locked() {
    for (auto &kv : pool_) {
        for (uint8_t *p : kv.second) munmap(p, kv.first);
    }
    pool_.clear();
    pooled_ = 0;
}

}  // namespace spyre
