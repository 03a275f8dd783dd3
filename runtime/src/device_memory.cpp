// Simulated device DRAM allocator (see device_memory.h).
#include "spyre/device_memory.h"

#include <sys/mman.h>

#include "spyre/error.h"

namespace spyre {

DeviceMemory::DeviceMemory(int64_t capacity_bytes) : capacity_(capacity_bytes) {}

DeviceMemory::~DeviceMemory() {
    for (auto &kv : allocations_) munmap(kv.second.ptr, kv.second.mapped);
}

uint64_t DeviceMemory::allocate(int64_t bytes, const std::string &tag) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes <= 0) throw Error("device allocation of " + std::to_string(bytes) + " bytes for '" + tag + "': size must be positive");
    if (bytes > capacity_ - used_) {
        throw Error("device memory exhausted: '" + tag + "' requested " + std::to_string(bytes) + " bytes, " +
                    std::to_string(capacity_ - used_) + " of " + std::to_string(capacity_) + " bytes are free");
    }
    int64_t mapped = (bytes + 4095) / 4096 * 4096;
    void *p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        throw Error("device memory exhausted: the host could not back '" + tag + "' (" + std::to_string(bytes) +
                    " bytes) of simulated device memory");
    }
    uint64_t h = next_handle_++;
    allocations_[h] = Allocation{static_cast<uint8_t *>(p), bytes, mapped, tag};
    used_ += bytes;
    return h;
}

void DeviceMemory::free(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(handle);
    if (it == allocations_.end()) throw Error("device free of unknown or already freed allocation " + std::to_string(handle));
    munmap(it->second.ptr, it->second.mapped);
    used_ -= it->second.bytes;
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

}  // namespace spyre
