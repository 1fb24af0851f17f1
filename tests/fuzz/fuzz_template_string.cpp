// libFuzzer: ${...} templates. The input is "TEMPLATE\0VALUE": the template
// is parsed, then expanded with VALUE as the environment variable X. A
// syntax error must say where it is; an expansion never re-expands a value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "devices/template_string.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string text = input.substr(0, split);
  std::string value = split == std::string::npos ? "" : input.substr(split + 1);
  try {
    kbuild::TemplateString t = kbuild::TemplateString::parse(text);
    const kbuild::Environment env({{"X", value}});
    kbuild::Paths paths;
    paths.torch_root = "/opt/torch";
    kbuild::Expansion x = t.expand(kbuild::TemplateContext{env, paths, "/fuzz"});
    // "${env:X}" alone must expand to exactly X's value, whatever it holds.
    if (text == "${env:X}" && !value.empty() && x.value != value) std::abort();
  } catch (const kbuild::TemplateSyntaxError& e) {
    if (e.offset > text.size()) std::abort();  // the error points into the text
  }
  return 0;
}
