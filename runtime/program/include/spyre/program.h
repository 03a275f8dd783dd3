// The Spyre device program: what one kernel is, in memory. One program runs on
// all cores of the card; it holds the argument table (tensors with dtype, shape
// and device layout; DRAM temporaries), scalar run-time parameters and, per
// core, the in-order instruction streams of its DMA, PT and SFU units.
// Its binary encoding is in program_format.h, its checks in validator.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "spyre/isa.h"
#include "spyre/layout.h"

namespace spyre {

constexpr uint32_t kProgramFormatVersion = 1;

enum class ArgKind : uint8_t { Input = 0, Output = 1, Temp = 2 };
const char *arg_kind_name(ArgKind k);

struct ProgramArgument {
    std::string name;
    ArgKind kind = ArgKind::Input;
    TensorShape shape;
    DeviceLayout layout;
};

struct ScalarParam {
    std::string name;
    DType dtype = DType::F32;
};

struct CoreStreams {
    std::array<std::vector<isa::Instruction>, isa::kNumUnits> unit;  // indexed by isa::Unit
};

struct Program {
    uint32_t format_version = kProgramFormatVersion;
    uint64_t machine_fingerprint = 0;
    std::string kernel_name;
    std::vector<ScalarParam> params;
    std::vector<ProgramArgument> args;
    std::vector<CoreStreams> cores;

    size_t instruction_count() const;
};

}  // namespace spyre
