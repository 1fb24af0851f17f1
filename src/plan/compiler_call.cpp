
#include "plan/compiler_call.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
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

// Whether the linker option `word` (a -Wl, part or a -Xlinker value) writes
// a file of its own: ld takes long options after one dash or two, and
// abbreviated, so any word that begins one of these names counts.
bool linker_writes_file(std::string_view word) {
  if (word.size() < 2 || word[0] != '-') return false;
  std::string_view name = word.substr(word[1] == '-' ? 2 : 1);
  name = name.substr(0, name.find('='));
  if (name == "o" || name == "M") return true;  // another output; the map on stdout
  constexpr std::array<std::string_view, 14> kWrites{
      "Map",          "print-map",  "dependency-file",     "out-implib",         "output-def",
      "output",       "cref",       "reproduce",           "why-extract",        "save-temps",
      "lto-obj-path", "plugin-opt", "print-archive-stats", "print-symbol-counts"};
  return name.size() >= 2 &&
         std::any_of(kWrites.begin(), kWrites.end(),
                     [name](std::string_view w) { return w.rfind(name, 0) == 0; });
}

// Whether the assembler option `word` (a -Wa, part or an -Xassembler value)
// writes a file of its own: a listing (-a[cdghlmns][=FILE]), a dependency
// file (--MD FILE), another output.
bool assembler_writes_file(std::string_view word) {
  return (word.rfind("-a", 0) == 0) || word == "--MD" || word == "-MD" || word == "-o";
}

// Whether a -Wl,/-Wa, word has a part that `writes` says writes a file.
bool passes_writing_part(std::string_view word, bool (*writes)(std::string_view)) {
  for (std::size_t start = 4; start <= word.size();) {
    const std::size_t end = std::min(word.find(',', start), word.size());
    if (writes(word.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool dependency_word(std::string_view w) {
  if (w == "-MD" || w == "-MMD" || w == "-MP") return true;
  return w.rfind("-MF", 0) == 0 || w.rfind("-MT", 0) == 0 || w.rfind("-MQ", 0) == 0;
}

std::string default_depfile(const std::string& output) {
  // g++'s spec (%.d%* on -o): the file name's last suffix becomes .d, or .d
  // is added when it has none.
  const std::size_t name = output.rfind('/') == std::string::npos ? 0 : output.rfind('/') + 1;
  const std::size_t dot = output.rfind('.');
  return (dot != std::string::npos && dot >= name ? output.substr(0, dot) : output) + ".d";
}

// The one list of spellings that make the compiler, the assembler or the
// linker write a file other than the output: beside it and named after it
// (the object would record kbuild's temporary name, the file would be lost
// with it) or where the option says (a hit would not write it). Such a
// command runs as it is.
bool writes_side_output(const std::vector<std::string>& argv, std::size_t i) {
  const std::string_view w(argv[i]);
  if (dependency_word(w)) return false;  // the build's own depfile (plan_compiler_call)
  const std::string_view value = i + 1 < argv.size() ? std::string_view(argv[i + 1]) : "";
  if (w == "-Xlinker") return linker_writes_file(value);
  if (w == "-Xassembler") return assembler_writes_file(value);
  if (w.rfind("-Wl,", 0) == 0) return passes_writing_part(w, linker_writes_file);
  if (w.rfind("-Wa,", 0) == 0) return passes_writing_part(w, assembler_writes_file);
  // Preprocessor options as they are (-Wp,-MD,FILE; -Xpreprocessor -MD).
  if (w.rfind("-Wp,", 0) == 0 || w == "-Xpreprocessor") return true;
  constexpr std::array<std::string_view, 4> kExact{"--coverage", "-ftest-coverage", "-aux-info",
                                                   "-fmodules-ts"};
  if (std::find(kExact.begin(), kExact.end(), w) != kExact.end()) return true;
  // -M*: dependency files (-MD, -MMD, -MF[FILE], clang's -MJ); -d*: RTL and
  // tree dumps (-da, -dp, -dumpbase), named after the output.
  constexpr std::array<std::string_view, 19> kPrefixes{"-M",
                                                       "-d",
                                                       "-fdump-",
                                                       "-fopt-info",
                                                       "-fcallgraph-info",
                                                       "-save-temps",
                                                       "-fprofile-",
                                                       "-fauto-profile",
                                                       "-fcreate-profile",
                                                       "-gsplit-dwarf",
                                                       "-fsave-optimization-record",
                                                       "-foptimization-record-",
                                                       "-ftime-trace",
                                                       "-fmodule-",
                                                       "-fdeps-",
                                                       "-fcompare-debug",
                                                       "-fcrash-diagnostics",
                                                       "-fproc-stat-report",
                                                       "-fstack-usage"};
  for (std::string_view p : kPrefixes)
    if (w.rfind(p, 0) == 0) return true;
  // -fdiagnostics-format=json-file, sarif-file: a file named after the source.
  return w.rfind("-fdiagnostics-format=", 0) == 0 && w.size() > 5 &&
         w.substr(w.size() - 5) == "-file";
}

namespace {

// Words after which the command is not one build with one output that
// kbuild can check and cache: it runs as it is. Besides every side output
// (writes_side_output), every long spelling but two (g++ takes
// abbreviations of them too). What the command reads (a response file, a
// plugin, specs, the programs -B names) is observed, not a reason.
bool runs_as_it_is(std::string_view w) {
  constexpr std::array<std::string_view, 7> exact{"-E",   "-S",       "-v",           "-",
                                                  "-###", "-wrapper", "-fsyntax-only"};
  if (std::find(exact.begin(), exact.end(), w) != exact.end()) return true;
  constexpr std::array<std::string_view, 2> prefixes{"-print-", "-dump"};
  for (std::string_view p : prefixes)
    if (w.rfind(p, 0) == 0) return true;
  if (w.rfind("--", 0) == 0) return w != "--param" && w != "--compile";
  return w.rfind("-o", 0) == 0 && w.size() > 2;
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

namespace {

// The dependency-file words of a command (-MD, -MMD, -MF, -MT, -MQ, -MP).
struct DependencyWords {
  bool writes = false;                    // -MD or -MMD
  bool other = false;                     // any of the others
  bool target = false;                    // -MT or -MQ
  std::optional<std::size_t> file_index;  // -MF's value
};

// Reads argv[i] when it is a dependency word (moving i past a value);
// false for any other word, or for a second -MF (nullopt: run as it is).
std::optional<bool> read_dependency_word(const std::vector<std::string>& argv, std::size_t& i,
                                         DependencyWords& deps) {
  const std::string& w = argv[i];
  if (!dependency_word(w)) return false;
  if (w == "-MD" || w == "-MMD") {
    deps.writes = true;
    return true;
  }
  deps.other = true;
  if (w == "-MF") {
    if (deps.file_index || i + 1 == argv.size()) return std::nullopt;
    deps.file_index = ++i;
  } else if (w.rfind("-MF", 0) == 0) {
    return std::nullopt;  // attached: split before (plan_compiler_call)
  } else if (w == "-MT" || w == "-MQ") {
    deps.target = true;
    ++i;
  } else if (w != "-MP") {
    deps.target = true;  // -MTtarget, -MQtarget
  }
  return true;
}

// The command with its dependency file named and targeted: an -MF (the
// default g++ derives from -o when none) and, when no -MT or -MQ names
// one, the -MQ for the output that g++ would write. false: it cannot be
// one build (a dependency file without -MD, a link's, one that is not a
// regular file).
bool plan_depfile(const DependencyWords& deps, std::size_t inputs, bool compile_only, bool header,
                  CompilerCall& call) {
  if (!deps.writes) return !deps.other;
  if (inputs != 1 || !(compile_only || header)) return false;
  std::vector<std::string>& argv = call.plan.command.argv;
  const std::string& output = call.plan.output;
  const std::string depfile = deps.file_index ? argv[*deps.file_index] : default_depfile(output);
  struct stat st {};
  if (depfile.empty() || depfile == "-" || depfile == output || depfile == call.sources[0] ||
      (::lstat(depfile.c_str(), &st) == 0 && !S_ISREG(st.st_mode)))
    return false;
  if (!deps.file_index) argv.insert(argv.end(), {"-MF", depfile});
  if (!deps.target) argv.insert(argv.end(), {"-MQ", output});
  call.plan.depfile = depfile;
  return true;
}

// argv with an attached -MFFILE as two words, -MF FILE (the work
// directory's file takes FILE's place as it runs).
std::vector<std::string> split_attached_depfile(const std::vector<std::string>& given) {
  std::vector<std::string> argv;
  for (std::size_t i = 0; i < given.size(); ++i) {
    const std::string& w = given[i];
    if (i > 0 && w.size() > 3 && w.rfind("-MF", 0) == 0) {
      argv.emplace_back("-MF");
      argv.push_back(w.substr(3));
    } else {
      argv.push_back(w);
    }
    // A value that looks like -MF... is not one.
    if (i > 0 && (takes_value(w) || w == "-MF") && i + 1 < given.size()) argv.push_back(given[++i]);
  }
  return argv;
}

}  // namespace

std::optional<CompilerCall> plan_compiler_call(const std::vector<std::string>& words) {
  const std::vector<std::string> argv = split_attached_depfile(words);
  std::optional<std::size_t> output_index;
  bool compile_only = false, shared = false, header = false;
  DependencyWords deps;
  std::vector<std::string> inputs;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (runs_as_it_is(w) || writes_side_output(argv, i)) return std::nullopt;
    const std::optional<bool> read = read_dependency_word(argv, i, deps);
    if (!read) return std::nullopt;
    if (*read) continue;
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
      inputs.push_back(w);  // assembly too: what it pulls in (.incbin, .include) is observed
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
  if (!plan_depfile(deps, call.sources.size(), compile_only, header, call)) return std::nullopt;
  return call;
}

bool compiler_refuses_files(const CompilerCall& call) {
  const std::string& output = call.plan.output;
  struct stat out {};
  const bool output_exists = ::stat(output.c_str(), &out) == 0;
  if (output_exists && !S_ISREG(out.st_mode)) return true;
  std::string dir = std::filesystem::path(output).parent_path().string();
  if (dir.empty()) dir.assign(1, '.');
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return true;
  if (!call.plan.depfile.empty()) {
    std::string depfile_dir = std::filesystem::path(call.plan.depfile).parent_path().string();
    if (depfile_dir.empty()) depfile_dir.assign(1, '.');
    if (::stat(depfile_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return true;
  }
  for (const std::string& source : call.sources) {
    if (::stat(source.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(source.c_str(), R_OK) != 0)
      return true;
    if (output_exists && st.st_dev == out.st_dev && st.st_ino == out.st_ino) return true;
  }
  return false;
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
