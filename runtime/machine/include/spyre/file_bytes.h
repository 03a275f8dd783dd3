// Whole files in and out, for everything the runtime and the tools read or write
// (machine descriptions, programs, tensors): reads refuse what is not a regular
// file or is larger than the caller allows before allocating anything; writes
// replace a file whole, never leaving a part of one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spyre {

// The whole content of the regular file `path`. Anything else (a directory, a
// device such as /dev/zero, a FIFO) and a file larger than `max_bytes` are a
// spyre::Error naming the path, found before anything is allocated.
std::vector<uint8_t> read_file_bytes(const std::string &path, uint64_t max_bytes);
// Writes `bytes` to `path`: a regular file (or a new one) is written whole to a temporary file
// beside it and renamed over it, so readers and concurrent writers never see a part of one;
// a device or FIFO is written in place. Throws spyre::Error naming the path.
void write_file_bytes(const std::string &path, const std::vector<uint8_t> &bytes);

}  // namespace spyre
