#include "run/input_manifest.hpp"

#include <sys/stat.h>

#include <unordered_map>

#include "kbuild/digest.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/json_text.hpp"

namespace kbuild {

std::int64_t ns(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_size), ns(st.st_mtim)};
}

std::string stamp_text(const std::string& path) {
  FileStamp st = stamp(path);
  return path + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns);
}

std::optional<nlohmann::json> parse_manifest(const std::string& bytes) {
  return parse_cbor(bytes);
}

std::string to_cbor(const nlohmann::json& j) {
  std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(j);
  return std::string(bytes.begin(), bytes.end());
}

// File times come from the kernel's coarse clock, as does `started`: a change
// in the very tick the build started is not seen, but the compiler is not yet
// running then (the key is hashed and the compiler started after it).
bool later(const struct timespec& a, const struct timespec& b) {
  return ns(a) > ns(b);
}

// Paths that, if they appeared, would be found before `header`: for each
// search directory the header lies under, the same relative name in every
// directory searched before it. Which directory and name the compiler used
// is not known, so every reading counts, less those whose candidate exists
// now (it existed when the compiler searched, so that reading was not it).
std::vector<std::string> shadowing_candidates(const std::string& header,
                                              const std::vector<std::string>& search) {
  const std::string h = normal_path(header);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < search.size(); ++i) {
    const std::string& dir = search[i];
    if (h.size() <= dir.size() + 1 || h.compare(0, dir.size(), dir) != 0 || h[dir.size()] != '/')
      continue;
    const std::string rel = h.substr(dir.size() + 1);
    for (std::size_t j = 0; j < i; ++j) {
      std::string candidate = search[j] + "/" + rel;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0) out.push_back(std::move(candidate));
    }
  }
  return out;
}

std::vector<std::string> parse_depfile(const std::string& text) {
  std::vector<std::string> paths;
  auto colon = text.find(": ");
  if (colon == std::string::npos) colon = text.find(":\n");
  if (colon == std::string::npos) return paths;
  std::string word;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // line continuation
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';  // an escaped blank inside a path
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (!word.empty()) paths.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) paths.push_back(word);
  return paths;
}

Result<std::string> input_manifest(const std::vector<std::string>& paths,
                                   const struct timespec& started) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const std::string& path : paths) {
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0) return Failure{path + " cannot be read"};
    // Changed once the build had started: what the compiler read may not
    // be what is hashed now.
    if (later(before.st_mtim, started) || later(before.st_ctim, started))
      return Failure{path + " changed during the build"};
    auto bytes = read_whole_file(path);
    if (!bytes) return Failure{path + " cannot be read"};
    inputs.push_back(
        {path, static_cast<std::int64_t>(before.st_size), ns(before.st_mtim), digest_hex(*bytes)});
  }
  return to_cbor(nlohmann::json{{"inputs", inputs}});
}

namespace {

bool input_unchanged(const nlohmann::json& input) {
  const std::string& path = input.at(0).get_ref<const std::string&>();
  FileStamp now = stamp(path);
  if (now.size == input.at(1).get<std::int64_t>() &&
      now.mtime_ns == input.at(2).get<std::int64_t>())
    return true;
  // Touched, or gone: only identical content still counts.
  auto bytes = read_whole_file(path);
  return bytes && digest_hex(*bytes) == input.at(3).get_ref<const std::string&>();
}

// Whether paths exist, asking about a directory before what is in it: most
// shadowing candidates lie in directories that do not exist (the source's
// directory + "bits/"...), so one stat answers for all of them.
class ExistenceCheck {
 public:
  bool exists(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0 && !directory_exists(path.substr(0, slash)))
      return false;
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  }

 private:
  bool directory_exists(const std::string& dir) {
    auto known = dirs_.find(dir);
    if (known != dirs_.end()) return known->second;
    bool found = exists(dir);  // its parent first, remembered too
    dirs_.emplace(dir, found);
    return found;
  }
  std::unordered_map<std::string, bool> dirs_;
};

}  // namespace

bool manifest_holds(const nlohmann::json& manifest) {
  for (const auto& input : manifest.at("inputs"))
    if (!input_unchanged(input)) return false;
  ExistenceCheck check;
  if (manifest.contains("absent"))
    for (const auto& path : manifest.at("absent"))
      if (check.exists(path.get_ref<const std::string&>())) return false;  // shadowed now
  if (manifest.contains("libraries"))
    for (const auto& lib : manifest.at("libraries")) {
      FileStamp now = stamp(lib.at(0).get_ref<const std::string&>());
      if (now.size != lib.at(1).get<std::int64_t>() ||
          now.mtime_ns != lib.at(2).get<std::int64_t>())
        return false;
    }
  return true;
}

bool inputs_unchanged(const std::string& manifest_bytes) {
  auto manifest = parse_manifest(manifest_bytes);
  if (!manifest) return false;
  try {
    return manifest_holds(*manifest);
  } catch (const nlohmann::json::exception&) {
    return false;  // a foreign or damaged manifest is a miss, never an error
  }
}

}  // namespace kbuild
