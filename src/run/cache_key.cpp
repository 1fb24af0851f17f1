
#include "run/cache_key.hpp"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>

#include "kbuild_config.h"
#include "run/input_manifest.hpp"
#include "site/isa.hpp"
#include "site/search.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// 4: the manifest is what the observer saw (a model's manifest is never read).
// 5: entries hold what the compiler printed and its dependency file (an
// older entry, without them, is never found: a miss, never a silent hit).
constexpr const char* kLocalKeyVersion = "kbuild-cache-5";
// 3: entries hold the output zstd-compressed (a reader of 2 never sees them).
// 4: observed manifests. 5: what the compiler printed, its dependency file.
constexpr const char* kRemoteKeyVersion = "kbuild-remote-key-5";

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

// The options whose value is a path the compiler reads or writes, joined
// (-I/x) or as the next word; and those whose next word is anything else.
constexpr std::string_view kPathOptions[] = {"-I",       "-isystem", "-iquote", "-idirafter",
                                             "-include", "-imacros", "-L",      "-o",
                                             "-T",       "-MF",      "-MT",     "-MQ"};
constexpr std::string_view kOtherValueOptions[] = {
    "-D", "-U", "-x",      "-Xlinker", "-Xassembler", "-Xpreprocessor",
    "-u", "-e", "--param", "-A",       "-l",          "-wrapper"};

// Whether `word` (after `before`) names a path the compiler reads or
// writes: an option's path, or a word that is no option (a source, an
// object). Anything else (-Wp,-D..., --define-macro=..., a word kbuild does
// not know) is none.
bool names_path(std::string_view word, std::string_view before) {
  auto one_of = [](std::string_view w, const auto& list) {
    return std::find(std::begin(list), std::end(list), w) != std::end(list);
  };
  if (one_of(before, kPathOptions)) return true;
  if (one_of(before, kOtherValueOptions)) return false;
  if (word.empty() || word[0] != '-') return true;
  return std::any_of(std::begin(kPathOptions), std::end(kPathOptions), [word](std::string_view o) {
    return o.size() <= 3 && word.size() > o.size() && word.substr(0, o.size()) == o;
  });
}

}  // namespace

std::string cpu_identity() {
  const CpuFeatures& cpu = read_cpu_features();
  std::string id = cpu.machine;
  for (const std::string& f : cpu.flags) id += " " + f;
  return id;
}

Result<CacheKey> cache_key(const KeyInput& input, const FileSystem& files) {
  Hasher h;
  h.add(kLocalKeyVersion);
  for (std::size_t i = 0; i < input.argv.size(); ++i)
    h.add(i == input.output_index ? "<output>" : input.argv[i]);
  // The output's extension can matter to the compiler; its directory cannot.
  h.add(fs::path(input.output).extension().string());
  for (const std::string& program : input.programs) h.add(stamp_text(files, program));
  h.add(fs::current_path().string());
  for (const std::string& extra : input.extra) h.add(extra);
  CacheKey key;
  for (const std::string& s : input.sources) {
    Result<std::string> bytes = files.read(s, std::numeric_limits<std::size_t>::max());
    if (!bytes) return Failure{bytes.why()};
    h.add(*bytes);
    key.source_digest.push_back(digest_hex(*bytes));
  }
  // -march=native / -mcpu=native compile for this CPU, which the driver asks
  // the CPU itself (cpuid): no file or variable the observer could see.
  h.add(cpu_identity());
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

Result<std::string> shareable_key(const KeyInput& input, const FileSystem& files,
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
    // Only a path the compiler reads or writes is taken as alike under the
    // base: a macro's value, what the linker is told (an rpath) and any word
    // not known to name such a path reach the binary as they are written.
    const std::string_view before = i > 0 ? std::string_view(input.argv[i - 1]) : "";
    if (!parts.base_dir.empty() && names_path(w, before))
      w = rebase_word(std::move(w), parts.base_dir);
    h.add(i == input.output_index ? "<output>" : program ? "<program>" : w);
    native = native || asks_native(w);
  }
  h.add(fs::path(input.output).extension().string());
  // A program by content, so a copy at another path with another mtime is
  // the same compiler and another build is not.
  for (const std::string& program : input.programs) {
    Result<std::string> id = program_hash(files, program, cache);
    if (!id) return Failure{program + " cannot be read"};
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
  for (const std::string& extra : parts.extra.empty() ? input.extra : parts.extra) h.add(extra);
  for (const std::string& s : input.sources) {
    Result<std::string> bytes = files.read(s, std::numeric_limits<std::size_t>::max());
    if (!bytes) return Failure{bytes.why()};
    h.add(*bytes);
  }
  if (native) h.add(cpu_identity());
  return h.hex();
}

ShareableParts pch_kernel_parts(const std::string& header_shared_key,
                                const std::vector<std::pair<std::string, std::string>>& inputs,
                                const std::string& include) {
  std::string listed;
  for (const auto& [path, digest] : inputs) listed += path + "\n" + digest + "\n";
  ShareableParts parts;
  parts.extra = {"pch " + header_shared_key + " " + to_hex(content_hash(listed))};
  parts.rewrites = {{include, "<pch>"}};
  return parts;
}

ShareableParts pch_header_parts(const std::string& include, const std::string& dir,
                                const std::string& local_key) {
  ShareableParts parts;
  parts.rewrites = {{include, "<pch>"}, {dir, "<pch-dir>"}, {local_key, "<pch-key>"}};
  parts.extra = {"pch-header-build"};
  return parts;
}

std::string isa_answer_key(const IsaAnswerKeyInput& input) {
  Digest key;
  for (const std::string& part :
       {input.format, std::string(KBUILD_VERSION), input.compiler_hash, input.compiler_name,
        input.machine, input.profile_digest, input.torch_root, input.version_py_digest,
        input.python_include, input.python_libdir, std::string(input.loaded ? "loaded" : "built"),
        input.ld_library_path, input.cpu}) {
    key.add(std::to_string(part.size()) + ":");  // each part delimited: no two lists alike
    key.add(part);
  }
  return "isa-" + key.hex();
}

// Under the format's number: entries of format 2 (whose digest was of the
// output decompressed, not of the frame read) and of format 3 (whose
// manifest holds neither what the compiler printed nor its dependency
// file, so a hit would lose its warnings) are neither read here nor dropped
// by an older kbuild reading this one's as damaged.
std::string redis_entry_name(const std::string& shared_key) {
  return "kbuild:entry:4:" + shared_key;
}

std::string redis_lease_name(const std::string& shared_key) {
  return "kbuild:lease:" + shared_key;
}

std::string http_entry_name(const std::string& shared_key) {
  return "kbuild-entry-4-" + shared_key;
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

// `text` without its comments and its string and character literals (the
// words a comment or a message holds ask nothing).
struct Code {
  std::string bare;
};

Code code_of(std::string_view text) {
  Code code;
  code.bare.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;  // to the line's end
      code.bare += '\n';
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
      code.bare += ' ';
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      const std::size_t end = std::min(j, text.size() - 1);
      code.bare += ' ';
      i = end;
    } else {
      code.bare += c;
    }
  }
  return code;
}

}  // namespace

namespace {

// Appends what `file` holds past `bytes` to it, up to `limit` bytes in all.
bool read_rest(const OpenFile& file, std::string& bytes, std::size_t limit) {
  char buffer[1 << 16];
  while (bytes.size() < limit) {
    const std::size_t want = std::min(sizeof buffer, limit - bytes.size());
    Result<std::size_t> n = file.read_at(buffer, want, bytes.size());
    if (!n) return false;
    if (*n == 0) break;
    bytes.append(buffer, *n);
  }
  return true;
}

}  // namespace

std::string clock_user(const FileSystem& files, const std::vector<std::string>& paths,
                       const EarlyDigests* early) {
  // Read once per file (its head was read, then the whole of it again: a
  // large kernel's 2,881 headers, every miss), searched with
  // memmem: a header has a '_' every few bytes, where a search that starts
  // from the first character stops.
  std::string bytes;
  auto has = [&bytes](std::string_view needle) {
    return ::memmem(bytes.data(), bytes.size(), needle.data(), needle.size()) != nullptr;
  };
  for (const std::string& file : paths) {
    // Text only: programs, libraries and archives the toolchain loads are
    // not preprocessed (and a FIFO is never opened).
    const std::optional<struct stat> st = files.status(file);
    if (!st || !S_ISREG(st->st_mode)) continue;
    // Scanned as it was hashed, while the compiler ran: this version names
    // neither macro.
    if (const EarlyDigests::Look* look = early ? early->find(file, *st) : nullptr;
        look && look->scanned && !look->mentions_clock)
      continue;
    Result<std::unique_ptr<OpenFile>> opened = files.open(file);
    if (!opened) continue;
    // A NUL in its first 8 KiB: a program, a library, an archive or a
    // precompiled header (whose tables name __DATE__), never source.
    bytes.clear();
    if (!read_rest(**opened, bytes, 8192) || bytes.find('\0') != std::string::npos) continue;
    if (!read_rest(**opened, bytes, std::string::npos)) continue;  // the manifest fails on it
    if (!has("__DATE__") && !has("__TIME")) continue;              // most headers: no second pass
    const Code code = code_of(bytes);
    if (has_word(code.bare, "__DATE__") || has_word(code.bare, "__TIME__") ||
        has_word(code.bare, "__TIMESTAMP__"))
      return file;
  }
  return "";
}

}  // namespace kbuild
