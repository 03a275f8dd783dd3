// Command-line checks shared by the tools and apps (CLI11 validators).
//
// CLI11 reads an unsigned option with strtoull, which takes "-5" as 2^64 - 5 and
// clamps "99999999999999999999999" to 2^64 - 1 without a word. A seed (or any
// count given as uint64_t) is checked as text first: decimal digits only, at
// most 2^64 - 1, so a typo is an error naming the value instead of another run.
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace spyre_cli {

inline const CLI::Validator &unsigned_64() {
    static const CLI::Validator check(
        [](std::string &text) -> std::string {
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
                return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
            }
            errno = 0;
            std::strtoull(text.c_str(), nullptr, 10);
            if (errno == ERANGE) return "'" + text + "' is larger than 18446744073709551615";
            return std::string();
        },
        "UINT64");
    return check;
}

}  // namespace spyre_cli
