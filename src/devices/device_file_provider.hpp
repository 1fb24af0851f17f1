// The provider a device file describes: an exec provider when it has
// "exec", else a list provider.
#pragma once

#include <memory>

#include "devices/device_file.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

std::shared_ptr<const Provider> make_provider(DeviceFile file);

}  // namespace kbuild
