#include "run/input_manifest.hpp"

#include <sys/stat.h>

#include <unordered_map>

#include "util/digest.hpp"
#include "util/file_util.hpp"
#include "util/json_text.hpp"

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

bool input_unchanged(const ManifestInput& input, std::string& path) {
  path.assign(input.path);
  FileStamp now = stamp(path);
  if (now.size == input.size && now.mtime_ns == input.mtime_ns) return true;
  // Touched, or gone: only identical content still counts.
  auto bytes = read_whole_file(path);
  return bytes && digest_hex(*bytes) == input.digest;
}

// Whether paths exist, asking about a directory before what is in it: most
// shadowing candidates lie in directories that do not exist (the source's
// directory + "bits/"...), so one stat answers for all of them.
class ExistenceCheck {
 public:
  bool exists(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0 && !directory_exists(path.substr(0, slash)))
      return false;
    path_.assign(path);
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0;
  }

 private:
  bool directory_exists(std::string_view dir) {
    auto known = dirs_.find(std::string(dir));
    if (known != dirs_.end()) return known->second;
    bool found = exists(dir);  // its parent first, remembered too
    dirs_.emplace(std::string(dir), found);
    return found;
  }
  std::string path_;  // reused: no allocation per path
  std::unordered_map<std::string, bool> dirs_;
};

}  // namespace

bool manifest_holds(const ManifestView& manifest) {
  std::string path;
  for (const ManifestInput& input : manifest.inputs)
    if (!input_unchanged(input, path)) return false;
  ExistenceCheck check;
  for (std::string_view absent : manifest.absent)
    if (check.exists(absent)) return false;  // shadowed now
  for (const ManifestLibrary& lib : manifest.libraries) {
    path.assign(lib.path);
    FileStamp now = stamp(path);
    if (now.size != lib.size || now.mtime_ns != lib.mtime_ns) return false;
  }
  return true;
}

bool inputs_unchanged(const std::string& manifest_bytes) {
  std::optional<ManifestView> manifest = read_manifest(manifest_bytes);
  return manifest && manifest_holds(*manifest);  // a foreign or damaged one: a miss
}

std::optional<std::string> restamped_here(const std::string& bytes) {
  std::optional<ManifestView> view = read_manifest(bytes);
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!view || !manifest || !manifest->contains("inputs")) return std::nullopt;
  ManifestView rest = *view;  // the absent paths and the libraries, as a local hit checks them
  rest.inputs.clear();
  if (!manifest_holds(rest)) return std::nullopt;
  for (nlohmann::json& record : (*manifest)["inputs"]) {
    if (!record.is_array() || record.size() < 4 || !record[0].is_string() || !record[3].is_string())
      return std::nullopt;
    const std::string path = record[0].get<std::string>();
    struct stat before {
    }, after{};
    if (::stat(path.c_str(), &before) != 0) return std::nullopt;
    auto content = read_whole_file(path);
    if (!content || digest_hex(*content) != record[3].get<std::string>()) return std::nullopt;
    // Changed while it was read: its stamp would not be that content's.
    if (::stat(path.c_str(), &after) != 0 || after.st_size != before.st_size ||
        ns(after.st_mtim) != ns(before.st_mtim) || ns(after.st_ctim) != ns(before.st_ctim))
      return std::nullopt;
    record[1] = static_cast<std::int64_t>(after.st_size);
    record[2] = ns(after.st_mtim);
  }
  return to_cbor(*manifest);
}

namespace {

void rebase_path(nlohmann::json& path, const std::string& from, const std::string& to) {
  if (!path.is_string()) return;
  const std::string& p = path.get_ref<const std::string&>();
  if (p.rfind(from, 0) == 0 && (p.size() == from.size() || p[from.size()] == '/'))
    path = to + p.substr(from.size());
}

}  // namespace

std::optional<std::string> rebase_manifest(const std::string& bytes, const std::string& from,
                                           const std::string& to) {
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!manifest || !manifest->is_object()) return std::nullopt;
  for (const char* list : {"inputs", "libraries"})
    if (manifest->contains(list) && (*manifest)[list].is_array())
      for (nlohmann::json& record : (*manifest)[list])
        if (record.is_array() && !record.empty()) rebase_path(record[0], from, to);
  if (manifest->contains("absent") && (*manifest)["absent"].is_array())
    for (nlohmann::json& path : (*manifest)["absent"]) rebase_path(path, from, to);
  return to_cbor(*manifest);
}

}  // namespace kbuild
