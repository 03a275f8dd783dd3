// A generated kernel's entry point, type-erased so one table can list kernels
// of different signatures (kernel_table.h), and checked when called: calling
// it with a signature other than the one it was registered with throws
// instead of jumping into a function with the wrong arguments.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <typeindex>
#include <typeinfo>

#include "program_kernel.h"

namespace llm {

class KernelFn {
public:
    KernelFn() : fn_(nullptr), type_(typeid(void)) {}
    KernelFn(std::nullptr_t) : KernelFn() {}
    template <typename... Args>
    KernelFn(int (*fn)(Args...)) : fn_(reinterpret_cast<void (*)()>(fn)), type_(typeid(int (*)(Args...))) {}

    explicit operator bool() const { return fn_ != nullptr; }

    template <typename... Args>
    int call(const std::string &name, Args... args) const {
        using Fn = int (*)(Args...);
        if (!fn_) throw std::runtime_error("kernel " + name + " was not built for this realization");
        if (type_ != std::type_index(typeid(Fn))) {
            throw std::runtime_error("kernel " + name + " called with a signature it was not built with");
        }
        return reinterpret_cast<Fn>(fn_)(args...);
    }

private:
    void (*fn_)();
    std::type_index type_;
};

// One kernel of the chain: its role ("d1_qkv"), the generated function's name
// (the profile's key), its two linked builds, the generator and parameters it
// was built from, and, for a kernel compiled while the app runs (kernel_cache.h),
// the program to call instead of a linked function. kernel_table.h lists the
// linked ones.
struct KernelEntry {
    std::string role;
    std::string function;
    KernelFn spyre, host;
    std::string generator, params;  // "matmul", "m=1 n=6144 k=4096"
    std::shared_ptr<const spyre_apps::ProgramKernel> program;  // set: run this program, not `spyre`
};

}  // namespace llm

#define LLM_KERNEL(f) ::llm::KernelFn(f)
