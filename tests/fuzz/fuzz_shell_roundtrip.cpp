// libFuzzer: the --dry-run quoting round trip. The input, split at NUL
// bytes, is an argv; shell_join must print a line that shell_split (shlex
// rules, as /bin/sh) reads back as the same argv. printable_line (how
// messages show paths) must give one line of printable text, and be
// idempotent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> argv;
  size_t start = 0;
  for (size_t nul; (nul = input.find('\0', start)) != std::string::npos; start = nul + 1)
    argv.push_back(input.substr(start, nul - start));
  argv.push_back(input.substr(start));

  auto back = kbuild::shell_split(kbuild::shell_join(argv));
  if (!back || *back != argv) std::abort();

  std::string shown = kbuild::printable_line(input);
  for (unsigned char c : shown)
    if (c < 0x20 || c == 0x7f) std::abort();
  if (kbuild::printable_line(shown) != shown) std::abort();
  return 0;
}
