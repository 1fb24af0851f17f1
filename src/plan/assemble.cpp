
#include "plan/assemble.hpp"

#include <filesystem>

#include "kbuild/error.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

void add_words(std::vector<std::string>& argv, const std::string& text, const Entry& entry) {
  auto words = shell_split(text);
  if (!words) {
    throw Error(ErrorKind::config, "unbalanced quote in option \"" + entry.value + "\" (from " +
                                       entry.origin.describe() + ")");
  }
  argv.insert(argv.end(), words->begin(), words->end());
}

// A source named like an option ("-rf.cpp") reaches the compiler as a file.
std::string as_file_argument(const std::string& path) {
  return !path.empty() && path[0] == '-' ? "./" + path : path;
}

// "-o X.so", "-c -o X.o", ... appended to argv; returns Inductor's text.
std::string output_part(const AssembleInput& in, std::vector<std::string>& argv,
                        std::size_t& output_index) {
  std::string output;
  switch (in.kind) {
    case OutputKind::shared_library:
    case OutputKind::precompiled_header: output = "-o"; break;
    case OutputKind::object:
      argv.push_back("-c");
      output = "-c -o";
      break;
    case OutputKind::preprocessed:
      argv.insert(argv.end(), {"-E", "-P"});
      output = "-E -P -o";
      break;
  }
  argv.push_back("-o");
  output_index = argv.size();
  argv.push_back(in.output);
  return output + " " + in.output;
}

template <typename Add>
std::string link_part(Add& add) {
  std::string ldflags, libs, libdirs;
  add(OptionList::ldflags, ldflags, "-", false);
  add(OptionList::libraries, libs, "-l", false);
  add(OptionList::libraries_dirs, libdirs, "-L", false);
  return ldflags + " " + libs + " " + libdirs;
}

// Runs of blanks as one, none at the ends (Inductor 2.6's " ".join of parts).
std::string single_spaced(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

bool links(OutputKind kind) {
  return kind == OutputKind::shared_library;
}

std::string default_output(const std::string& source, OutputKind kind) {
  std::filesystem::path p(source);
  switch (kind) {
    case OutputKind::shared_library: return p.replace_extension(".so").string();
    case OutputKind::object: return p.replace_extension(".o").string();
    case OutputKind::precompiled_header: return source + ".gch";
    case OutputKind::preprocessed: return p.replace_extension(".i").string();
  }
  return source;
}

std::vector<std::string> render_entry(OptionList list, const Entry& e) {
  std::vector<std::string> words;
  switch (list) {
    case OptionList::definitions:
      words.push_back("-D");
      // A -D given to kbuild is already one argument; list entries split as in Inductor.
      if (e.origin.layer == Layer::user)
        words.push_back(e.value);
      else
        add_words(words, e.value, e);
      break;
    case OptionList::cflags:
    case OptionList::ldflags: add_words(words, "-" + e.value, e); break;
    case OptionList::include_dirs: words.push_back("-I" + e.value); break;
    case OptionList::libraries_dirs: words.push_back("-L" + e.value); break;
    case OptionList::libraries: words.push_back("-l" + e.value); break;
    case OptionList::passthrough_args: add_words(words, e.value, e); break;
  }
  return words;
}

Command assemble(const BuildOptions& options, const AssembleInput& in) {
  Command cmd;
  auto& argv = cmd.argv;
  // Inductor's string, part by part (its own spacing, for --inductor-line).
  std::string sources, definitions, cflags, includes, passthrough;
  auto add = [&](OptionList list, std::string& text, const std::string& prefix, bool quote) {
    for (const Entry& e : options.entries(list)) {
      for (std::string& w : render_entry(list, e)) argv.push_back(std::move(w));
      text += prefix + (quote ? shell_quote(e.value) : e.value) + " ";
    }
  };

  argv.push_back(in.compiler);
  if (in.kind == OutputKind::precompiled_header) {
    argv.insert(argv.end(), {"-x", "c++-header"});
    sources = "-x c++-header ";
  }
  for (const std::string& source : in.sources) {
    std::string s = as_file_argument(source);
    argv.push_back(s);
    sources += (sources.empty() || sources.back() == ' ' ? "" : " ") + s;
  }
  add(OptionList::definitions, definitions, "-D ", false);
  add(OptionList::cflags, cflags, "-", false);
  if (in.include_pch) {
    argv.insert(argv.end(), {"-include", *in.include_pch});
    includes = "-include " + *in.include_pch + " ";
  }
  add(OptionList::include_dirs, includes, "-I", true);
  add(OptionList::passthrough_args, passthrough, "", false);
  std::string link;
  if (in.link_before_output && links(in.kind)) link = link_part(add);
  std::string output = output_part(in, argv, cmd.output_index);
  cmd.inductor_line = in.compiler + " " + sources + " " + definitions + " " + cflags + " " +
                      includes + " " + passthrough + " " + link + output;
  if (!in.link_before_output && links(in.kind)) cmd.inductor_line += " " + link_part(add);
  if (in.single_spaced) cmd.inductor_line = single_spaced(cmd.inductor_line);
  return cmd;
}

}  // namespace kbuild
