
#include "run/cache_key.hpp"

#include <sys/stat.h>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string_view>

#include "run/input_manifest.hpp"
#include "site/isa.hpp"
#include "site/search.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

constexpr const char* kLocalKeyVersion = "kbuild-cache-3";
// 3: entries hold the output zstd-compressed (a reader of 2 never sees them).
constexpr const char* kRemoteKeyVersion = "kbuild-remote-key-3";

// Fields hashed length-prefixed: no ambiguity between them.
class Hasher {
 public:
  void add(const std::string& s) {
    std::uint64_t n = s.size();
    sha_.add(&n, sizeof n);
    sha_.add(s);
  }
  std::string hex() { return sha_.hex(); }

 private:
  Digest sha_;
};

// The shareable key's fields, BLAKE2b (the remote cache's hash), also
// length-prefixed.
class HashedFields {
 public:
  void add(const std::string& s) {
    std::uint64_t n = s.size();  // length-prefixed: no ambiguity between fields
    text_.append(reinterpret_cast<const char*>(&n), sizeof n);
    text_ += s;
  }
  std::string hex() const { return to_hex(content_hash(text_)); }

 private:
  std::string text_;
};

bool asks_debug_info(const std::string& w) {
  return w.rfind("-g", 0) == 0 && w != "-g0" && w.rfind("-gno-", 0) != 0 && w != "-gz";
}

bool asks_native(const std::string& w) {
  return (w.rfind("-march=", 0) == 0 || w.rfind("-mcpu=", 0) == 0 || w.rfind("-mtune=", 0) == 0) &&
         w.compare(w.find('=') + 1, std::string::npos, "native") == 0;
}

// The linker's words: -Wl,a,b split at commas, -Xlinker's next word.
std::vector<std::string> linker_words(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w == "-Xlinker" && i + 1 < argv.size()) {
      words.push_back(argv[++i]);
    } else if (w.rfind("-Wl,", 0) == 0) {
      for (std::size_t at = 4; at <= w.size();) {
        const std::size_t comma = std::min(w.find(',', at), w.size());
        words.push_back(w.substr(at, comma - at));
        at = comma + 1;
      }
    }
  }
  return words;
}

// A file the linker reads that it names: "--version-script=F" or
// "--version-script F" (`next` the following word).
void linker_file(const std::string& w, const std::string* next, std::vector<std::string>& out) {
  for (const char* option : {"--version-script", "--dynamic-list", "--script", "-T"}) {
    const std::size_t n = std::strlen(option);
    if (w == option && next) out.push_back(*next);
    if (w.size() > n && w.compare(0, n, option) == 0 && (option[1] == 'T' || w[n] == '='))
      out.push_back(w.substr(option[1] == 'T' ? n : n + 1));
  }
  if (w.size() > 1 && w[0] == '@') out.push_back(w.substr(1));
}

// The words of a linker response file (-Wl,@FILE), and of those it names.
void response_words(const std::string& file, int depth, std::vector<std::string>& words) {
  auto text = depth < 8 ? read_whole_file(file) : std::nullopt;
  if (!text) return;
  std::istringstream in(*text);
  for (std::string w; in >> w;) {
    if (w.size() > 1 && w[0] == '@') response_words(w.substr(1), depth + 1, words);
    words.push_back(w);
  }
}

}  // namespace

std::vector<std::string> named_files(const std::vector<std::string>& argv) {
  std::vector<std::string> files;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w.size() > 1 && w[0] == '@') files.push_back(w.substr(1));
    for (const char* prefix : {"-specs=", "--specs=", "-fplugin="})
      if (w.rfind(prefix, 0) == 0) files.push_back(w.substr(std::strlen(prefix)));
    // Linker scripts given to the driver (-T script, -Tscript).
    if (w == "-T" && i + 1 < argv.size()) files.push_back(argv[i + 1]);
    if (w.size() > 2 && w.rfind("-T", 0) == 0) files.push_back(w.substr(2));
  }
  std::vector<std::string> words = linker_words(argv);
  for (std::size_t i = 0, n = words.size(); i < n; ++i)
    if (words[i].size() > 1 && words[i][0] == '@') response_words(words[i].substr(1), 0, words);
  for (std::size_t i = 0; i < words.size(); ++i)
    linker_file(words[i], i + 1 < words.size() ? &words[i + 1] : nullptr, files);
  return files;
}

std::string cpu_identity() {
  const CpuFeatures& cpu = read_cpu_features();
  std::string id = cpu.machine;
  for (const std::string& f : cpu.flags) id += " " + f;
  return id;
}

std::optional<CacheKey> cache_key(const KeyInput& input, const Environment& env) {
  // The programs the driver runs from another place (-B DIR, COMPILER_PATH,
  // GCC_EXEC_PREFIX: as, cc1plus, ld, specs) are not stamped: not cached.
  if (env.get_nonempty("COMPILER_PATH") || env.get_nonempty("GCC_EXEC_PREFIX")) return std::nullopt;
  for (const std::string& w : input.argv)
    if (w.rfind("-B", 0) == 0) return std::nullopt;
  Hasher h;
  h.add(kLocalKeyVersion);
  for (std::size_t i = 0; i < input.argv.size(); ++i)
    h.add(i == input.output_index ? "<output>" : input.argv[i]);
  // The output's extension can matter to the compiler; its directory cannot.
  h.add(fs::path(input.output).extension().string());
  for (const std::string& program : input.programs) h.add(stamp_text(program));
  h.add(fs::current_path().string());
  for (const char* var : kCompilerVariables)
    h.add(std::string(var) + "=" + env.get(var).value_or(""));
  for (const std::string& extra : input.extra) h.add(extra);
  for (const std::string& file : named_files(input.argv)) {
    auto bytes = read_whole_file(file);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
  }
  CacheKey key;
  for (const std::string& s : input.sources) {
    auto bytes = read_whole_file(s);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
    key.source_digest.push_back(digest_hex(*bytes));
  }
  h.add(cpu_identity());  // -march=native / -mcpu=native compile for this CPU
  if (input.links)
    for (const std::string& lib : input.libraries)
      for (const std::string& d : input.libraries_dirs)
        for (const std::string& path : library_files(lib, d)) h.add(stamp_text(path));
  key.hex = h.hex();
  return key;
}

std::string rebase_word(std::string word, const std::string& base) {
  if (base.empty()) return word;
  const std::string to = kBasePlaceholder;
  for (std::size_t at = 0; (at = word.find(base, at)) != std::string::npos;) {
    const std::size_t end = at + base.size();
    const bool starts =
        at == 0 || std::strchr("=,:", word[at - 1]) != nullptr || (at == 2 && word[0] == '-');
    const bool ends = end == word.size() || word[end] == '/';
    if (starts && ends) {
      word.replace(at, base.size(), to);
      at += to.size();
    } else {
      at = end;
    }
  }
  return word;
}

std::optional<std::string> shareable_key(const KeyInput& input, const Environment& env,
                                         const ShareableParts& parts, const TrustedDir* cache) {
  HashedFields h;
  h.add(kRemoteKeyVersion);
  const bool debug = std::any_of(input.argv.begin(), input.argv.end(), asks_debug_info);
  bool native = false;
  // The programs (each step's first words: the launcher, if any, then the
  // compiler) are named by content below; their paths are machine-local.
  std::size_t in_step = 0;
  for (std::size_t i = 0; i < input.argv.size(); ++i, ++in_step) {
    std::string w = input.argv[i];
    if (w == "<next step>") in_step = std::size_t(-1);
    const bool program = in_step < input.programs.size();
    for (const auto& [from, to] : parts.rewrites)
      for (std::size_t at = 0; !debug && !from.empty() && (at = w.find(from, at)) != w.npos;
           at += to.size())
        w.replace(at, from.size(), to);
    // A macro's value and what the linker is told (an rpath, the dynamic
    // linker) reach the binary as they are written: never taken as alike.
    const std::string_view before = i > 0 ? std::string_view(input.argv[i - 1]) : "";
    const bool verbatim = w.rfind("-D", 0) == 0 || w.rfind("-U", 0) == 0 ||
                          w.rfind("-Wl,", 0) == 0 || before == "-D" || before == "-U" ||
                          before == "-Xlinker";
    if (!parts.base_dir.empty() && !verbatim) w = rebase_word(std::move(w), parts.base_dir);
    h.add(i == input.output_index ? "<output>" : program ? "<program>" : w);
    native = native || asks_native(w);
  }
  h.add(fs::path(input.output).extension().string());
  // A program by content, so a copy at another path with another mtime is
  // the same compiler and another build is not.
  for (const std::string& program : input.programs) {
    auto id = program_hash(program, cache);
    if (!id) return std::nullopt;
    h.add(*id);
  }
  // Debug info records the working directory; without it, relative paths
  // name the same files wherever the build runs from.
  std::string cwd = debug ? fs::current_path().string() : "";
  if (!parts.base_dir.empty()) {
    h.add(std::string("base-dir opt-in"));  // never the key of a build without it
    cwd = rebase_word(std::move(cwd), parts.base_dir);
  }
  h.add(cwd);
  for (const char* var : kCompilerVariables)
    h.add(std::string(var) + "=" + env.get(var).value_or(""));
  for (const std::string& extra : parts.extra.empty() ? input.extra : parts.extra) h.add(extra);
  for (const std::string& file : named_files(input.argv)) {
    auto bytes = read_whole_file(file);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
  }
  for (const std::string& s : input.sources) {
    auto bytes = read_whole_file(s);
    if (!bytes) return std::nullopt;
    h.add(*bytes);
  }
  if (native) h.add(cpu_identity());
  if (input.links)
    for (const std::string& lib : input.libraries)
      for (const std::string& d : input.libraries_dirs)
        for (const char* ext : {".so", ".a"}) {
          struct stat st {};
          std::string path = d + "/lib" + lib + ext;
          h.add(path + ":" + std::to_string(::stat(path.c_str(), &st) == 0 ? st.st_size : -1));
        }
  return h.hex();
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

namespace {

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `word` occurs in `text` as a whole identifier.
bool has_word(std::string_view text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !is_identifier_char(text[at - 1]);
    const std::size_t end = at + word.size();
    if (starts && (end == text.size() || !is_identifier_char(text[end]))) return true;
  }
  return false;
}

void skip_blanks(std::string_view text, std::size_t& at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' ||
                              text[at] == '\r' || text[at] == '\\'))
    ++at;
}

// Each __has_include("x") / __has_include(<x>) (and _next) in `text`.
void find_probes(std::string_view text, const std::string& from,
                 std::vector<HasIncludeProbe>& out) {
  constexpr std::string_view word = "__has_include";
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    std::size_t i = at + word.size();
    if (text.substr(i, 5) == "_next") i += 5;
    skip_blanks(text, i);
    if (i >= text.size() || text[i] != '(') continue;
    ++i;
    skip_blanks(text, i);
    if (i >= text.size() || (text[i] != '"' && text[i] != '<')) continue;  // a macro: see below
    const char close = text[i] == '"' ? '"' : '>';
    const std::size_t end = text.find(close, i + 1);
    if (end == std::string_view::npos ||
        text.substr(i + 1, end - i - 1).find('\n') != std::string_view::npos)
      continue;
    out.push_back({std::string(text.substr(i + 1, end - i - 1)), close == '"', from});
  }
}

// `text` without its comments, and without its string and character
// literals too (the words a comment or a message holds ask nothing).
struct Code {
  std::string with_strings, bare;
};

Code code_of(std::string_view text) {
  Code code;
  code.with_strings.reserve(text.size());
  code.bare.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;  // to the line's end
      code.with_strings += '\n';
      code.bare += '\n';
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
      code.with_strings += ' ';
      code.bare += ' ';
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      const std::size_t end = std::min(j, text.size() - 1);
      code.with_strings.append(text.substr(i, end - i + 1));
      code.bare += ' ';
      i = end;
    } else {
      code.with_strings += c;
      code.bare += c;
    }
  }
  return code;
}

}  // namespace

SourceScan scan_sources(const std::vector<std::string>& files) {
  SourceScan scan;
  for (const std::string& file : files) {
    auto bytes = read_whole_file(file);
    if (!bytes) continue;  // the manifest fails on it anyway
    const std::string_view raw(*bytes);
    const bool clock = raw.find("__DATE__") != std::string_view::npos ||
                       raw.find("__TIME") != std::string_view::npos;
    const bool incbin = raw.find(".incbin") != std::string_view::npos;
    const bool probes = raw.find("__has_include") != std::string_view::npos;
    if (!clock && !incbin && !probes) continue;  // most headers: no second pass
    const Code code = code_of(raw);
    if (scan.uses_clock.empty() &&
        (has_word(code.bare, "__DATE__") || has_word(code.bare, "__TIME__") ||
         has_word(code.bare, "__TIMESTAMP__")))
      scan.uses_clock = file;
    if (scan.incbin.empty() && code.with_strings.find(".incbin") != std::string::npos)
      scan.incbin = file;
    if (probes) find_probes(code.with_strings, file, scan.probes);
  }
  return scan;
}

ProbeRecords probe_records(const std::vector<HasIncludeProbe>& probes,
                           const std::vector<std::string>& search) {
  ProbeRecords records;
  std::map<std::string, bool> known;  // path -> exists, each recorded once
  for (const HasIncludeProbe& p : probes) {
    std::vector<std::string> dirs;
    if (p.quoted) {
      const std::string beside = fs::path(p.from).parent_path().string();
      dirs.push_back(beside.empty() ? "." : beside);
    }
    dirs.insert(dirs.end(), search.begin(), search.end());
    for (const std::string& dir : dirs) {
      const std::string path = normal_path(dir + "/" + p.name);
      struct stat st {};
      auto [it, fresh] = known.emplace(path, ::stat(path.c_str(), &st) == 0);
      if (fresh) (it->second ? records.present : records.absent).push_back(path);
      if (it->second) break;  // found here: the directories after it were not asked
    }
  }
  return records;
}

}  // namespace kbuild
