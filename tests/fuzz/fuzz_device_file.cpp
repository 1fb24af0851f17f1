// libFuzzer: device file text -> parse and validate, then resolve the
// device's options in every mode. Config errors (kbuild::Error) are the
// expected answer to bad input; anything else escaping, a crash, a hang or
// a leak is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "kbuild/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    kbuild::DeviceFile file = kbuild::parse_device_file(text, "/fuzz/device.json");
    if (file.exec) return 0;  // would run a program: not for a fuzzer
    std::string device = file.device;
    auto provider = kbuild::make_provider(std::move(file));
    const kbuild::Environment env({{"HOME", "/home/fuzz"}, {"SET", "value"}});
    kbuild::Paths paths;
    paths.torch_root = "/opt/torch";
    const kbuild::ResolveContext ctx{paths, env};
    for (bool aot : {false, true})
      for (bool compile_only : {false, true}) {
        try {
          provider->options(kbuild::DeviceQuery{device, aot, compile_only}, ctx);
        } catch (const kbuild::Error&) {
        }
      }
  } catch (const kbuild::Error&) {
  }
  return 0;
}
