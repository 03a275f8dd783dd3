// Row pieces of program-tree instructions (see row_pieces.h).
#include "program_tree/row_pieces.h"

namespace spyre {
namespace compiler {

namespace fld = isa::field;

std::optional<SymInstruction> matmul_row_piece(const SymInstruction &matmul, int piece, int pieces, int64_t pt_pass_rows) {
    if (matmul.op != isa::Opcode::Matmul || pieces < 1) return std::nullopt;
    SymInstruction out = matmul;
    auto &f = out.f;
    const int64_t m = f[fld::Matmul::m].base;
    if (m % pieces != 0 || (m / pieces) % pt_pass_rows != 0) return std::nullopt;
    const int64_t rows = m / pieces;
    f[fld::Matmul::c].base += piece * rows * f[fld::Matmul::ldc].base;
    f[fld::Matmul::a].base += piece * rows * f[fld::Matmul::lda].base;
    f[fld::Matmul::m].base = rows;
    return out;
}

std::optional<SymInstruction> load_row_piece(const SymInstruction &load, int piece, int pieces, int64_t stick_bytes) {
    namespace Ld = fld::DmaLoad;
    if (load.op != isa::Opcode::DmaLoad || pieces < 1) return std::nullopt;
    SymInstruction out = load;
    auto &f = out.f;
    if (f[Ld::planes].base != 1 || f[Ld::valid_planes].base != 1) return std::nullopt;
    const int64_t rows = f[Ld::rows].base, row_bytes = f[Ld::row_bytes].base;
    if (f[Ld::valid_rows].base != rows || f[Ld::valid_bytes].base != row_bytes) return std::nullopt;
    if (rows == 1) {
        if (row_bytes % ((int64_t)pieces * stick_bytes) != 0) return std::nullopt;
        const int64_t bytes = row_bytes / pieces;
        f[Ld::sp].base += piece * bytes;
        f[Ld::dram].base += piece * bytes;
        f[Ld::row_bytes].base = f[Ld::valid_bytes].base = bytes;
        return out;
    }
    if (rows % pieces != 0) return std::nullopt;
    const int64_t piece_rows = rows / pieces;
    f[Ld::sp].base += piece * piece_rows * f[Ld::sp_row_stride].base;
    f[Ld::dram].base += piece * piece_rows * f[Ld::dram_row_stride].base;
    f[Ld::rows].base = f[Ld::valid_rows].base = piece_rows;
    return out;
}

}  // namespace compiler
}  // namespace spyre
