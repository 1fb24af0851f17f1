
#include "plan/compiler_call.hpp"

#include <sys/stat.h>
#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace kbuild {

namespace {

// Options whose value is the next word.
constexpr std::array<std::string_view, 22> kTakesValue{
    "-I",      "-D",       "-U",         "-L",        "-l",       "-include",    "-isystem",
    "-iquote", "-imacros", "-idirafter", "-isysroot", "-Xlinker", "-Xassembler", "-Xpreprocessor",
    "-T",      "-u",       "-z",         "-e",        "--param",  "-aux-info",   "-MT",
    "-MQ"};

// Words after which the command is not one build with one output that
// kbuild can check and cache: it runs as it is. Among them, every option
// that writes a file beside the output or names one after it (the object
// would record kbuild's temporary name, the file would be lost with it),
// and every long spelling but two (g++ takes abbreviations of them too).
bool runs_as_it_is(std::string_view w) {
  constexpr std::array<std::string_view, 19> exact{"-E",
                                                   "-S",
                                                   "-M",
                                                   "-MM",
                                                   "-MD",
                                                   "-MMD",
                                                   "-MF",
                                                   "-v",
                                                   "-",
                                                   "-###",
                                                   "-fsyntax-only",
                                                   "--coverage",
                                                   "-fprofile-arcs",
                                                   "-ftest-coverage",
                                                   "-gsplit-dwarf",
                                                   "-fstack-usage",
                                                   "-fsave-optimization-record",
                                                   "-aux-info",
                                                   "-wrapper"};
  if (std::find(exact.begin(), exact.end(), w) != exact.end()) return true;
  constexpr std::array<std::string_view, 16> prefixes{
      "-print-",          "-dump",      "-save-temps",      "-Wp,",     "@",      "-fdump-",
      "-fcallgraph-info", "-fprofile-", "-fauto-profile",   "-fplugin", "-specs", "-B",
      "-Wl,-Map",         "-Wl,--Map",  "-fcreate-profile", "--sysroot"};
  for (std::string_view p : prefixes)
    if (w.rfind(p, 0) == 0) return true;
  if (w.rfind("--", 0) == 0) return w != "--param" && w != "--compile";
  return w.rfind("-o", 0) == 0 && w.size() > 2;
}

// Assembly can pull in files (.incbin) that no dependency list names, so
// its output could not be checked against them.
bool is_assembly(const std::string& input) {
  std::string_view w(input);
  return w.size() > 2 && (w.substr(w.size() - 2) == ".s" || w.substr(w.size() - 2) == ".S");
}

bool takes_value(std::string_view w) {
  return std::find(kTakesValue.begin(), kTakesValue.end(), w) != kTakesValue.end();
}

// The language a `-x` word names (`-x LANG` or `-xLANG`); "" for any other word.
std::string_view language(const std::vector<std::string>& argv, std::size_t i) {
  std::string_view w(argv[i]);
  if (w == "-x") return i + 1 < argv.size() ? std::string_view(argv[i + 1]) : "-x";
  return w.rfind("-x", 0) == 0 ? w.substr(2) : "";
}

}  // namespace

std::optional<CompilerCall> plan_compiler_call(const std::vector<std::string>& argv) {
  std::optional<std::size_t> output_index;
  bool compile_only = false, shared = false, header = false;
  std::vector<std::string> inputs;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (runs_as_it_is(w)) return std::nullopt;
    if (std::string_view lang = language(argv, i); !lang.empty()) {
      // Only a header precompiled (Inductor's prefix header), named before
      // its one input; any other language change runs as it is.
      if (lang != "c++-header" || header || !inputs.empty()) return std::nullopt;
      header = true;
      i += w == "-x" ? 1 : 0;
    } else if (w == "-o") {
      if (output_index || i + 1 == argv.size()) return std::nullopt;
      output_index = ++i;
    } else if (takes_value(w)) {
      ++i;
    } else if (w == "-c" || w == "--compile") {
      compile_only = true;
    } else if (w == "-shared") {
      shared = true;
    } else if (w.empty() || w[0] != '-') {
      if (is_assembly(w)) return std::nullopt;
      inputs.push_back(w);
    }
  }
  // One object or precompiled header per compile; a program (neither -c
  // nor -shared) is not a kernel.
  if (!output_index || inputs.empty()) return std::nullopt;
  if (header ? shared || inputs.size() != 1
             : (!compile_only && !shared) || (compile_only && inputs.size() != 1))
    return std::nullopt;
  // An output that is not a regular file (-o /dev/null, a FIFO,
  // /proc/self/fd/1) or is a link gets what the compiler writes there.
  struct stat st {};
  if (::lstat(argv[*output_index].c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return std::nullopt;
  CompilerCall call;
  // The libraries a link reads and where it looks (-l NAME, -lNAME, -l:FILE,
  // -Wl,-lNAME; -L DIR, -LDIR): stamped like a device's own libraries.
  const Origin given{Layer::user, "command line", "", 0};
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    for (const auto& [flag, list] :
         {std::pair{"-l", OptionList::libraries}, std::pair{"-L", OptionList::libraries_dirs},
          std::pair{"-Wl,-l", OptionList::libraries},
          std::pair{"-Wl,-L", OptionList::libraries_dirs}}) {
      const std::string_view f(flag);
      if (w == f && f.size() == 2 && i + 1 < argv.size())
        call.plan.options.add(list, argv[i + 1], given);
      else if (w.size() > f.size() && w.compare(0, f.size(), f) == 0 &&
               w.find(',', f.size()) == std::string::npos)
        call.plan.options.add(list, w.substr(f.size()), given);
    }
  }
  call.plan.kind = header         ? OutputKind::precompiled_header
                   : compile_only ? OutputKind::object
                                  : OutputKind::shared_library;
  call.plan.output = argv[*output_index];
  call.plan.command.argv = argv;
  call.plan.command.output_index = *output_index;
  call.sources = std::move(inputs);
  return call;
}

}  // namespace kbuild

namespace kbuild {

CompilerKind compiler_kind(std::string_view compiler) {
  auto has = [&](std::string_view s) { return compiler.find(s) != std::string_view::npos; };
  if (has("clang")) return CompilerKind::clang;
  if (has("gcc") || has("g++") || has("gnu-c++")) return CompilerKind::gcc;
  return CompilerKind::other;
}

}  // namespace kbuild
