// libFuzzer: any bytes as JSON text (depth-limited, surrogateescape), and
// any bytes as a string: written by dump_json and read back, exactly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "util/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    kbuild::parse_json_text(bytes);
  } catch (const kbuild::JsonSyntaxError&) {
  }
  nlohmann::json doc = {{bytes, nlohmann::json::array({bytes})}};
  if (kbuild::parse_json_text(kbuild::dump_json(doc, 2)) != doc) std::abort();
  return 0;
}
