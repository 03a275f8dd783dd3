// The text form of Spyre programs: spyre-objdump prints it, spyre-as reads it
// back, and assembling a disassembly gives the identical binary.
//
// Syntax (one statement per line, ';' starts a comment):
//   .kernel NAME
//   .machine 0xFINGERPRINT          optional; default: the current machine's
//   .param NAME DTYPE                 scalar run-time parameter (f32, f16, i32, i8)
//   .arg NAME KIND DTYPE extent=[e0,e1,..] stick=S order=[o0,..] padded=[p0,..]
//                                     KIND: input | output | temp; order outermost first;
//                                     order and padded are optional (default layout)
//   .core N            or   .core A-B   the following streams belong to core N
//                                     (or to each core A..B, where the symbol C in an
//                                     operand is that core's index)
//   .unit dma | pt | sfu              the following instructions go to that unit's stream
//   MNEMONIC field=value field=value ...   every field of isa.def, in any order
//
// Field values: integers (decimal or 0x hex, optional sign); for affine fields
// a linear expression over the loop indices L0..L3 and the core index C, e.g.
// `4096*C+256*L0-128*L1`; for Type fields a dtype name (f16); for Arg fields an
// argument name or index; for Imm fields an integer or a float literal written
// with a decimal point or exponent (stored as f32 bits), e.g. imm=0.5.
// Errors name the line and column.
#pragma once

#include <string>

#include "spyre/machine.h"
#include "spyre/program.h"

namespace spyre {

// Throws spyre::Error("LINE:COL: message") on bad input.
Program assemble_program(const std::string &text, const MachineDescription &m, const std::string &source_name = "<input>");

std::string disassemble_program(const Program &p);

}  // namespace spyre
