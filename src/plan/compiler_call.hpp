// compiler_call: kbuild cc: reading a compiler's argv into a request, and what kind of compiler it
// is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.hpp"

// A compiler command given as it is (`kbuild cc -- g++ ...`, or kbuild
// started as g++): what it reads and writes, so that it runs through the
// output cache and launchers (plan_steps in plan.hpp, build_runner.hpp) without a
// word of it changed, but for a dependency file (-MD, -MMD) named and
// targeted explicitly (plan.depfile). What kbuild cannot treat as one build
// (no `-o`, preprocessing, -M and -MM, a program link, --version, ...) runs
// as it is.
namespace kbuild {

struct CompilerCall {
  BuildPlan plan;  // kind, output, command (the argv as given, output_index)
  std::vector<std::string> sources;
};

// words[0] is the compiler (a path). nullopt: run the words as they are.
std::optional<CompilerCall> plan_compiler_call(const std::vector<std::string>& words);

// Whether `word` is one of the dependency-file options compiler mode
// caches: -MD, -MMD, -MF[FILE], -MT[TARGET], -MQ[TARGET], -MP.
bool dependency_word(std::string_view word);

// The dependency file g++ writes for -MD without -MF: the output's last
// suffix replaced by .d ("dir/k.cpp.o" -> "dir/k.cpp.d", "k" -> "k.d").
std::string default_depfile(const std::string& output);

// Whether argv[i] (with its value, for -Xlinker and -Xassembler) makes the
// compiler, assembler or linker write a file besides the output: the one
// list of such spellings (-MD, -Wa,-adhln=FILE, -Xlinker -Map=FILE,
// -Wl,--out-implib,FILE, -fopt-info-*=FILE, -da, --coverage, ...).
bool writes_side_output(const std::vector<std::string>& argv, std::size_t i);

// Whether the compiler refuses the call's files itself: a source missing,
// unreadable or not a regular file, the output's directory missing or not
// a directory, the output a directory or the same file as a source. Such a
// call runs as it is, so that the compiler answers with its own message
// and exit code (a build of kbuild's refuses them with its own).
bool compiler_refuses_files(const CompilerCall& call);

}  // namespace kbuild

// Which compiler family a command names. Like Inductor, this is decided from
// the compiler's path alone, so it costs no process spawn.
namespace kbuild {

enum class CompilerKind { gcc, clang, other };

// "clang" anywhere in the path is clang (so clang++ is not g++); "gcc",
// "g++" or "gnu-c++" is gcc; anything else (c++, icpx, ...) is other.
CompilerKind compiler_kind(std::string_view compiler);

}  // namespace kbuild
