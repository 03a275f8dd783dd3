// Reading and writing NumPy .npy files (format versions 1.0-3.0, C or Fortran
// order, little-endian float16/float32/int32/int8), the tensor file format of
// this field. Shapes are returned outermost first, as NumPy writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyre/dtype.h"

namespace spyre {

struct NpyArray {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;  // NumPy order: outermost first
    bool fortran_order = false;
    std::vector<uint8_t> data;   // raw little-endian elements
};

// Throws spyre::Error naming the file and the problem.
NpyArray read_npy(const std::string &path);
// The same parser on the bytes of a whole .npy file already in memory; errors
// name `source` where read_npy names the path. `data` may be null when size is 0.
NpyArray parse_npy(const uint8_t *data, size_t size, const std::string &source);
void write_npy(const std::string &path, const NpyArray &a);
// The bytes write_npy writes; errors name `destination` where write_npy names the path.
std::vector<uint8_t> encode_npy(const NpyArray &a, const std::string &destination);

}  // namespace spyre
