#include "plan/base_layer.hpp"

#include "plan/compiler_kind.hpp"

namespace kbuild {

BuildOptions base_layer(const BaseSettings& s) {
  const Origin origin{Layer::base, "base", "", 0};
  const CompilerKind kind = compiler_kind(s.compiler);
  BuildOptions o;
  auto cflag = [&](const char* flag) { o.add(OptionList::cflags, flag, origin); };

  if (s.debug) {
    cflag("O0");
    cflag("g");
  } else {
    cflag(s.min_optimize ? "O1" : "O3");
    cflag("DNDEBUG");
  }
  // -ffast-math spelled out, then its unsafe parts switched back off.
  for (const char* f : {"fno-trapping-math", "funsafe-math-optimizations", "ffinite-math-only",
                        "fno-signed-zeros", "fno-math-errno", "fno-finite-math-only",
                        "fno-unsafe-math-optimizations", "ffp-contract=off"})
    cflag(f);
  if (kind == CompilerKind::gcc) {
    cflag("fexcess-precision=fast");
    cflag("fno-tree-loop-vectorize");
  }
  if (s.machine == "ppc64le")
    cflag("mcpu=native");
  else if (s.machine == "riscv64")
    cflag("march=rv64gc");
  else if (s.machine == "riscv32")
    cflag("march=rv32gc");
  else
    cflag("march=native");
  if (s.do_link) cflag("shared");
  cflag("fPIC");
  if (s.warning_all) cflag("Wall");
  cflag("std=c++17");
  cflag("Wno-unused-variable");
  cflag("Wno-unknown-pragmas");
  if (kind == CompilerKind::clang) cflag("Wno-ignored-optimization-argument");
  if (kind == CompilerKind::gcc) cflag("pedantic");

  // Inductor always adds the joined extra flags, even when empty.
  std::string extra;
  for (const std::string& f : s.extra_flags) extra += (extra.empty() ? "" : " ") + f;
  o.add(OptionList::passthrough_args, extra, origin);
  return o;
}

}  // namespace kbuild
