// assemble: a build's request, and Inductor's command assembled from its options.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/build_options.hpp"
#include "kbuild/request.hpp"
#include "site/isa.hpp"

// Turns finalized options into the compiler's argv, in Inductor's order:
//   CXX SOURCES DEFINITIONS CFLAGS [-include PCH] INCLUDES PASSTHROUGH OUTPUT
//   [LDFLAGS LIBS LIBDIRS]            (the bracketed link part only when linking)
// or, with link_before_output (Inductor 2.6, 2.7), the link part before OUTPUT.
namespace kbuild {

bool links(OutputKind kind);
// The output Inductor would name for `source` ("k.cpp" -> "k.so", "h.h" -> "h.h.gch").
std::string default_output(const std::string& source, OutputKind kind);

struct AssembleInput {
  std::string compiler;
  std::vector<std::string> sources;
  OutputKind kind = OutputKind::shared_library;
  std::string output;
  std::optional<std::string> include_pch;  // -include HEADER
  // The Inductor line's shape (its profile): 2.6 and 2.7 put the link part
  // before the output and join the line with single spaces.
  bool link_before_output = false;
  bool single_spaced = false;
};

struct Command {
  std::vector<std::string> argv;
  std::size_t output_index = 0;  // argv[output_index] is the output path
  // The exact string Inductor's get_command_line() produces for the same
  // options (spacing included); splitting it POSIX-style gives `argv` unless
  // a source or library dir holds blanks or quotes (Inductor leaves those
  // unquoted and so breaks them; kbuild keeps each path one argument).
  std::string inductor_line;
};

// `options` must be finalized. Passthrough, definition, cflag and ldflag
// entries are split into words POSIX-style, as Inductor's shlex.split does;
// paths, and -D values given on kbuild's command line, are single arguments. Throws Error(config)
// for an entry with an unbalanced quote.
Command assemble(const BuildOptions& options, const AssembleInput& input);

// The argv words one entry of `list` becomes ("-D", "USE_NPU"; "-I/p"; ...).
std::vector<std::string> render_entry(OptionList list, const Entry& entry);

}  // namespace kbuild

// What a build asks for: the device query, the output kind, sources and
// output, the compiler and the user's own flags. Its own module: planning
// (build_plan) and the ISA probes (isa_settings) both read it.
namespace kbuild {}  // namespace kbuild
