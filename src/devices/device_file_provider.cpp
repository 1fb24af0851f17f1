#include "devices/device_file_provider.hpp"

#include "devices/exec_provider.hpp"
#include "devices/list_provider.hpp"

namespace kbuild {

std::shared_ptr<const Provider> make_provider(DeviceFile file) {
  if (file.exec) return make_exec_provider(std::move(file));
  return make_list_provider(std::move(file));
}

}  // namespace kbuild
