// libFuzzer: what an exec provider prints (untrusted program output) ->
// the 7 lists, or a provider error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "devices/device_file_load.hpp"
#include "kbuild/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kbuild::parse_provider_output(text, "fuzz provider", kbuild::Origin{});
  } catch (const kbuild::Error&) {
  }
  return 0;
}
