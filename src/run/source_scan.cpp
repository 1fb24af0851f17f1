#include "run/source_scan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>

#include "util/file_util.hpp"

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
