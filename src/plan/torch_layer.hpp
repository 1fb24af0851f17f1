// The torch layer: torch macros, ISA, OpenMP, Python and torch paths and
// libraries (Inductor's CppTorchOptions on top of the base layer).
#pragma once

#include "kbuild/isa.hpp"
#include "kbuild/options_result.hpp"
#include "kbuild/paths.hpp"

namespace kbuild {

struct TorchSettings {
  bool aot_mode = false;
  Isa isa;
};

// Requires paths.torch_root. Python include/libdir entries that are unknown
// are left out with a note.
OptionsResult torch_layer(const TorchSettings& settings, const Paths& paths);

}  // namespace kbuild
