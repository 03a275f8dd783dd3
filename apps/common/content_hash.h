// A 64-bit FNV-1a hash of bytes: names kernel cache entries (kernel_cache.h) and lets MPI
// ranks compare their run descriptions (apps/llm/tensor_parallel.cpp). Not cryptographic:
// whoever needs certainty compares the hashed text itself, as the kernel cache does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spyre_apps {

inline uint64_t content_hash(const char *bytes, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)bytes[i]) * 1099511628211ull;
    return h;
}
inline uint64_t content_hash(const std::string &s) { return content_hash(s.data(), s.size()); }

}  // namespace spyre_apps
