// registry: the parts only the library uses (the API: kbuild/registry.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kbuild/registry.hpp"

// The device branches Inductor 2.11 hard-codes: cpu, cuda (and ROCm), xpu, mps.
namespace kbuild {

// What every device gets: TORCH_ROOT/lib as a library dir when torch is known.
OptionsResult default_device_options(const ResolveContext& ctx);

// One provider per built-in device, in a fixed order (cpu, cuda, xpu, mps).
std::vector<std::pair<std::string, std::shared_ptr<const Provider>>> builtin_providers();

}  // namespace kbuild
