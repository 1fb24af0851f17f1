#include "devices/pkg_config.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <sstream>

#include "kbuild/error.hpp"
#include "util/file_system.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

// pkg-config's package names: gtk+-3.0, sigc++-2.0, libxml-2.0, zeta_sdk.
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == '+' || c == '@';
}
bool is_version_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == '+' || c == '~' || c == ':';
}

void skip_blanks(std::string_view text, std::size_t& at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
}

}  // namespace

std::optional<PkgConfigPackage> parse_pkg_config_package(std::string_view text) {
  std::size_t at = 0;
  skip_blanks(text, at);
  const std::size_t name_from = at;
  while (at < text.size() && is_name_char(text[at])) ++at;
  PkgConfigPackage package;
  package.name = std::string(text.substr(name_from, at - name_from));
  // A leading '-' would be read as one of pkg-config's options.
  if (package.name.empty() || package.name[0] == '-') return std::nullopt;
  skip_blanks(text, at);
  if (at == text.size()) return package;
  static const char* const kOperators[] = {"==", "!=", "<=", ">=", "=", "<", ">"};
  std::string op;
  for (const char* candidate : kOperators)
    if (text.substr(at).rfind(candidate, 0) == 0) {
      op = candidate;
      break;
    }
  if (op.empty()) return std::nullopt;
  at += op.size();
  skip_blanks(text, at);
  const std::size_t version_from = at;
  while (at < text.size() && is_version_char(text[at])) ++at;
  const std::string version(text.substr(version_from, at - version_from));
  skip_blanks(text, at);
  if (version.empty() || at != text.size()) return std::nullopt;
  package.condition = (op == "==" ? "=" : op) + " " + version;
  return package;
}

namespace {

// -I/x, or -I followed by /x as the next word.
bool takes_value(const std::vector<std::string>& words, std::size_t i, const std::string& flag,
                 std::string& value, std::size_t& used) {
  const std::string& word = words[i];
  if (word.rfind(flag, 0) != 0) return false;
  if (word.size() > flag.size()) {
    value = word.substr(flag.size());
    used = 1;
    return true;
  }
  if (i + 1 >= words.size()) return false;
  value = words[i + 1];
  used = 2;
  return true;
}

}  // namespace

std::optional<BuildOptions> pkg_config_flags(const std::string& printed, bool libs,
                                             const Origin& origin) {
  std::optional<std::vector<std::string>> words = shell_split(printed);
  if (!words) return std::nullopt;
  BuildOptions out;
  const OptionList other = libs ? OptionList::ldflags : OptionList::cflags;
  for (std::size_t i = 0; i < words->size();) {
    const std::vector<std::string>& w = *words;
    std::string value;
    std::size_t used = 1;
    if (!libs && takes_value(w, i, "-I", value, used)) {
      out.add(OptionList::include_dirs, value, origin);
    } else if (!libs && takes_value(w, i, "-D", value, used)) {
      out.add(OptionList::definitions, shell_quote(value), origin);
    } else if (libs && takes_value(w, i, "-L", value, used)) {
      out.add(OptionList::libraries_dirs, value, origin);
    } else if (libs && takes_value(w, i, "-l", value, used)) {
      out.add(OptionList::libraries, value, origin);
    } else if (w[i].size() > 1 && w[i][0] == '-') {
      // Inductor puts the '-' back; an argument of its own stays with it.
      std::string entry = shell_quote(w[i].substr(1));
      if (i + 1 < w.size() && (w[i + 1].empty() || w[i + 1][0] != '-')) {
        entry += " " + shell_quote(w[i + 1]);
        used = 2;
      }
      out.add(other, entry, origin);
    } else {
      // A word that is no option (a library file given by path): as written.
      out.add(OptionList::passthrough_args, shell_quote(w[i]), origin);
    }
    i += used;
  }
  return out;
}

namespace {

constexpr std::chrono::seconds kPkgConfigTimeout{30};

class PkgConfigRun {
 public:
  PkgConfigRun(const PkgConfigPackage& package, const PkgConfigAsker& asker, const Environment& env,
               ProcessRunner& processes)
      : package_(package), asker_(asker), env_(env), processes_(processes) {}

  void add_to(BuildOptions& out) {
    // pkg-config's inputs: read through kbuild's environment, so a report records them.
    for (const char* var :
         {"PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR",
          "PKG_CONFIG_TOP_BUILD_DIR", "PKG_CONFIG_DISABLE_UNINSTALLED",
          "PKG_CONFIG_ALLOW_SYSTEM_CFLAGS", "PKG_CONFIG_ALLOW_SYSTEM_LIBS",
          "PKG_CONFIG_SYSTEM_INCLUDE_PATH", "PKG_CONFIG_SYSTEM_LIBRARY_PATH"})
      (void)env_.get(var);
    program_ = find_program();
    const std::string pc_file = find_pc_file();
    if (asker_.check_trust)
      if (auto trust = check_trusted_file(pc_file, "pkg-config file"); !trust)
        throw Error(ErrorKind::config, where() + ": " + trust.why());
    const std::string cflags = flags("--cflags", pc_file);
    const std::string libs = flags("--libs", pc_file);
    add_flags(cflags, false, pc_file, out);
    add_flags(libs, true, pc_file, out);
  }

 private:
  // "device 'acc' (acc.json:3)"
  std::string where() const {
    return "device '" + asker_.device + "' (" + asker_.file + ":" + std::to_string(package_.line) +
           ")";
  }
  std::string path_state() const {
    std::optional<std::string> path = env_.get("PKG_CONFIG_PATH");
    if (!path) return "PKG_CONFIG_PATH is not set";
    if (path->empty()) return "PKG_CONFIG_PATH is empty";
    return "PKG_CONFIG_PATH=" + printable_line(*path);
  }

  std::string find_program() const {
    const std::string named = env_.get_nonempty("PKG_CONFIG").value_or("pkg-config");
    std::optional<std::string> found = find_executable(named, env_);
    if (found) return *found;
    if (env_.get_nonempty("PKG_CONFIG"))
      throw Error(ErrorKind::provider,
                  where() + ": pkg_config needs pkg-config, and PKG_CONFIG names '" +
                      printable_line(named) +
                      "', which is not found or not executable; set PKG_CONFIG to pkg-config's "
                      "path, or unset it");
    throw Error(ErrorKind::provider,
                where() +
                    ": pkg_config needs pkg-config, which is not on PATH; install it (Debian: "
                    "apt-get install pkgconf) or set PKG_CONFIG to its path");
  }

  ProcessResult run(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{program_};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessRequest opts;
    opts.capture_output = true;
    opts.max_capture = 1u << 20;
    opts.timeout = kPkgConfigTimeout;
    opts.environment = &env_;
    opts.handle_interrupts = true;
    ProcessResult result;
    const std::string what = "pkg-config " + shell_join(args);
    try {
      result = processes_.run(argv, opts);
    } catch (const Error& e) {
      throw Error(ErrorKind::provider, where() + ": " + what + ": " + e.what());
    }
    if (result.interrupted_by)
      throw Error(ErrorKind::interrupted, where() + ": " + what + ": " + result.describe());
    if (result.timed_out)
      throw Error(ErrorKind::provider,
                  where() + ": " + what + " timed out after " +
                      std::to_string(kPkgConfigTimeout.count()) + "s; is pkg-config (" + program_ +
                      ") waiting for something?",
                  tail(result.err));
    return result;
  }

  // The .pc file pkg-config reads for the package.
  std::string find_pc_file() const {
    ProcessResult found = run({"--print-errors", "--variable=pcfiledir", package_.name});
    std::string dir = found.out;
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r' || dir.back() == ' '))
      dir.pop_back();
    // Found, but a package its Requires names is not.
    if (!found.success() &&
        found.err.find("required by '" + package_.name + "'") != std::string::npos)
      throw Error(ErrorKind::provider,
                  where() + ": pkg-config package '" + package_.name +
                      "' requires a package pkg-config does not find (named below); a package "
                      "it requires may be missing: set PKG_CONFIG_PATH to include the "
                      "directories of the .pc files it requires (" +
                      path_state() + ")",
                  tail(found.err));
    if (!found.success() || dir.empty())
      throw Error(ErrorKind::provider,
                  where() + ": pkg-config package '" + package_.name + "' not found (" +
                      path_state() + "); set PKG_CONFIG_PATH to the directory holding " +
                      package_.name + ".pc",
                  tail(found.err));
    return dir + "/" + package_.name + ".pc";
  }

  // pkg-config --cflags or --libs for the package and its condition.
  std::string flags(const std::string& which, const std::string& pc_file) const {
    ProcessResult printed = run({"--print-errors", which, package_.spec()});
    if (printed.success()) return printed.out;
    if (!package_.condition.empty()) {
      ProcessResult version = run({"--modversion", package_.name});
      std::string installed = version.out;
      while (!installed.empty() && std::isspace(static_cast<unsigned char>(installed.back())))
        installed.pop_back();
      if (version.success() && !installed.empty())
        throw Error(
            ErrorKind::provider,
            where() + ": pkg-config package '" + package_.name + "' is version " +
                printable_line(installed) + " (" + pc_file + "), and the device file asks for '" +
                package_.spec() + "'; install a matching version, or set PKG_CONFIG_PATH " +
                "to the directory holding its " + package_.name + ".pc (" + path_state() + ")",
            tail(printed.err));
    }
    throw Error(ErrorKind::provider,
                where() + ": pkg-config " + which + " '" + package_.spec() + "' failed with " +
                    printed.describe() + " (" + pc_file +
                    "); a package it requires may be missing: set PKG_CONFIG_PATH to include "
                    "the directories of the .pc files named below (" +
                    path_state() + ")",
                tail(printed.err));
  }

  void add_flags(const std::string& printed, bool libs, const std::string& pc_file,
                 BuildOptions& out) const {
    Origin origin{Layer::device, asker_.provider + " pkg-config " + package_.name, pc_file,
                  field_line(pc_file, libs ? "libs:" : "cflags:")};
    std::optional<BuildOptions> sorted = pkg_config_flags(printed, libs, origin);
    if (!sorted)
      throw Error(ErrorKind::provider,
                  where() + ": pkg-config " + (libs ? "--libs" : "--cflags") + " '" +
                      package_.spec() + "' printed an unclosed quote: " +
                      printable_line(printed.substr(0, 200)) + " (" + pc_file + ")");
    out.append(*sorted);
  }

  // The line of the .pc file's "Cflags:" or "Libs:" (lowercase `field`);
  // 0 when it has none (the flags come from a package it requires).
  static int field_line(const std::string& pc_file, const std::string& field) {
    Result<std::string> text = read_whole_file(pc_file);
    if (!text) return 0;
    std::istringstream lines(*text);
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
      ++number;
      std::string lower = line.substr(0, field.size());
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower == field) return number;
    }
    return 0;
  }

  static std::string tail(const std::string& err) {
    return err.size() > 4000 ? err.substr(err.size() - 4000) : err;
  }

  const PkgConfigPackage& package_;
  const PkgConfigAsker& asker_;
  const Environment& env_;
  ProcessRunner& processes_;
  std::string program_;
};

}  // namespace

void add_pkg_config_package(const PkgConfigPackage& package, const PkgConfigAsker& asker,
                            const Environment& env, ProcessRunner& processes, BuildOptions& out) {
  PkgConfigRun(package, asker, env, processes).add_to(out);
}

}  // namespace kbuild
