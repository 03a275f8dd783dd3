// The one exception type of the Spyre runtime and tools. Library entry points
// with a C interface catch it and turn it into an error code plus message.
#pragma once

#include <stdexcept>
#include <string>

namespace spyre {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string &what) : std::runtime_error(what) {}
};

}  // namespace spyre
