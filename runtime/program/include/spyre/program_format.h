// The binary encoding of a Spyre program (.spyre files and the blob embedded
// in generated objects). Little-endian:
//
//   "SPYREPRG"  u32 format_version  u64 machine_fingerprint  u32 flags(0)
//   str kernel_name                      (str = u16 length + bytes, 1..255 printable ASCII
//                                         characters other than space and ';': one assembler token)
//   u16 num_params  { str name, u8 dtype }
//   u16 num_args    { str name, u8 kind, u8 dtype, u8 rank, i64 extent[rank],
//                     u8 stick_dim, u8 order[rank], i64 padded[rank] }
//   u16 num_cores   { per unit dma, pt, sfu: u32 count, instruction[count] }
//      instruction: u16 opcode, then each field of isa.def in order: fixed
//      width by kind, or for affine kinds i64 base, u8 loop mask, i32 stride per set bit
//   u64 checksum (FNV-1a of every byte before it)
//
// decode_program only parses (throwing spyre::Error "offset N: ..."); the
// semantic checks live in validator.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyre/file_bytes.h"
#include "spyre/program.h"

namespace spyre {

std::vector<uint8_t> encode_program(const Program &p);
Program decode_program(const uint8_t *data, size_t size);
inline Program decode_program(const std::vector<uint8_t> &bytes) { return decode_program(bytes.data(), bytes.size()); }

// The largest file read_file_bytes reads by default: 256 MiB, some 2500 times
// the largest compiled program of this project (about 100 KB).
constexpr uint64_t kMaxProgramFileBytes = uint64_t{256} << 20;

// read_file_bytes (spyre/file_bytes.h) at most kMaxProgramFileBytes.
std::vector<uint8_t> read_file_bytes(const std::string &path);

}  // namespace spyre
