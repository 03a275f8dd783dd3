// The Spyre backend's compile errors: every pass reports a schedule it cannot
// compile by throwing spyre::CompileError, whose message names the Func, the
// loop and the rule (and the fix where there is one). The lowering pass turns
// it into Halide's CompileError at its boundary (spyre_lowering.cpp), so a
// generator run prints it as "gen_X: error: ..." and exits 1.
//
// Its own header so that a pass, a planner or a test that reports errors does
// not include the driver (spyre_lowering.h).
#pragma once

#include <stdexcept>
#include <string>

namespace spyre {

class CompileError : public std::runtime_error {
public:
    explicit CompileError(const std::string &w) : std::runtime_error(w) {}
};

}  // namespace spyre
