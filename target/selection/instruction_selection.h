// Instruction selection for one core: walks the device region of the lowered
// Halide IR (the body of the loop split across cores) with the core index
// fixed, and produces the core's program tree (program_tree.h):
//  - serial loops with constant extents become hardware loops;
//  - Allocates stored in MemoryType::VTCM get scratchpad addresses (first fit);
//  - vector copies DRAM -> scratchpad and scratchpad -> DRAM become DMA
//    transfers (plain copy Funcs and in()/copy_to_host() wrappers alike);
//  - matmul-shaped update loops (acc += B[k, n-vector] * A[m, k]) become PT
//    matmul tiles;
//  - any other vector arithmetic over scratchpad becomes SFU instructions
//    (expression trees through scratchpad temporaries).
// Every rule violation is a CompileError naming the Func, the loop and the rule.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "Halide.h"
#include "program_tree/double_buffering.h"
#include "program_tree/program_tree.h"
#include "selection/scratchpad_plan.h"
#include "spyre/layout.h"
#include "spyre/machine.h"

namespace spyre {
namespace compiler {

// A tensor argument of the kernel as the device region uses it.
struct KernelTensor {
    std::string name;     // Halide buffer name (Load/Store name)
    int arg_index = 0;    // index in the program's argument table
    Halide::Type type;
    bool is_output = false;
    std::vector<int64_t> padded;  // padded extents: the dense strides Halide indexes with
    DeviceLayout layout;          // the device layout of the argument (stick along dimension 0)
};

struct KernelInterface {
    std::map<std::string, KernelTensor> tensors;     // by name
    std::vector<std::string> scalar_params;          // run-time scalar parameters, program order
    std::map<std::string, Halide::Type> param_types;
    std::map<std::string, Halide::Internal::Parameter> param_objects;
    std::set<std::string> double_buffered;  // Funcs to stage in two copies (double_buffering.h)
    std::set<std::string> computed_ahead;   // Funcs computed one iteration ahead, in two copies if double_buffered
    std::set<std::string> warned;           // Funcs already warned about (once per Func and kernel)
};

// A part of a distributed scratchpad buffer that a core wrote in the core loop (its bytes [lo, hi)).
struct GatheredPart {
    std::string buffer;
    int64_t lo = 0, hi = 0;
};

struct CoreProgram {
    std::vector<ProgramNode> tree;
    std::vector<PingPongBuffer> pingpong;  // double-buffered scratchpad buffers
    int64_t scratchpad_peak = 0;
    std::string scratchpad_peak_description;
    std::vector<ScratchpadPlacement> placements;  // where each scratchpad buffer was placed (for errors)
    std::vector<GatheredPart> gathered;    // distributed regions: the parts this core wrote
};

// Token channel on which core 0 of a distributed region counts the gathered parts' arrivals.
int gather_channel();

// `core_var` is the name of the loop split across cores; `region_body` its body (or, for a
// distributed region of `cores` cores, the Allocate around the core loop and what follows it).
CoreProgram select_core_instructions(const Halide::Internal::Stmt &region_body, const std::string &core_var, int core,
                                     const MachineDescription &m, KernelInterface &interface, bool distributed = false,
                                     int cores = 1);

}  // namespace compiler
}  // namespace spyre
