
#include "devices/profile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>

#include "kbuild/error.hpp"
#include "kbuild_config.h"
#include "site/site.hpp"
#include "util/environment.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxProfileBytes = 1 << 20;
constexpr int kMaxExtendsDepth = 8;

const std::set<std::string> kTopKeys = {"profile", "extends",   "description", "provenance",
                                        "command", "gcc_match", "base",        "torch",
                                        "device",  "isa",       "cuda"};
const std::set<std::string> kProvenanceKeys = {"repository", "commit", "release", "evidence",
                                               "sources"};
const std::set<std::string> kBaseLists = {"cflags"};
// What every device's options add (2.9: c10), before the device's own.
const std::set<std::string> kDeviceLists = {"libraries"};
const std::set<std::string> kTorchLists = {"definitions",    "include_dirs", "cflags",
                                           "libraries_dirs", "libraries",    "passthrough_args"};
const std::set<std::string> kIsaKinds = {"avx2", "avx512", "avx512_vnni", "amx", "neon", "sve256"};

// Reads one profile file, checking every key and type as it goes.
// "env:NAME" or "env:NAME=VALUE" with NAME a variable name ([A-Za-z_][A-Za-z0-9_]*).
bool env_atom(const std::string& atom) {
  if (atom.rfind("env:", 0) != 0) return false;
  std::string name =
      atom.substr(4, atom.find('=') == std::string::npos ? std::string::npos : atom.find('=') - 4);
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), word);
}

class ProfileReader : public JsonFileReader {
 public:
  using JsonFileReader::JsonFileReader;

  const json& object(const json& v, const std::string& ptr,
                     const std::set<std::string>& keys) const {
    if (!v.is_object()) fail(ptr, "expected an object, got " + json_type_name(v));
    for (const auto& [key, value] : v.items())
      if (!keys.count(key))
        fail_unknown_key(ptr + "/" + json_pointer_token(key), key, {keys.begin(), keys.end()},
                         comma_joined(keys));
    return v;
  }

  std::string string(const json& v, const std::string& ptr) const {
    if (!v.is_string()) fail(ptr, "expected a string, got " + json_type_name(v));
    std::string s = v.get<std::string>();
    if (s.find('\0') != std::string::npos)
      fail(ptr, "a NUL character would cut the argument short; remove it");
    return s;
  }

  bool boolean(const json& v, const std::string& ptr) const {
    if (!v.is_boolean()) fail(ptr, "expected true or false, got " + json_type_name(v));
    return v.get<bool>();
  }

  std::string choice(const json& v, const std::string& ptr,
                     const std::set<std::string>& allowed) const {
    std::string s = string(v, ptr);
    if (!allowed.count(s)) fail(ptr, "'" + s + "' is not one of: " + comma_joined(allowed));
    return s;
  }

  // "flag" or {"flag": "...", "when": "atom !atom"}.
  ProfileEntry entry(const json& v, const std::string& ptr) {
    ProfileEntry e;
    e.file = path_;
    e.line = doc_.value_position(ptr).line;
    if (v.is_string()) {
      e.value = string(v, ptr);
      return e;
    }
    if (!v.is_object())
      fail(ptr, "expected a string or {\"flag\": ..., \"when\": ...}, got " + json_type_name(v));
    object(v, ptr, {"flag", "when"});
    if (!v.contains("flag")) fail(ptr, "missing key 'flag'");
    e.value = string(v["flag"], ptr + "/flag");
    if (v.contains("when")) e.when = conditions(v["when"], ptr + "/when");
    return e;
  }

  std::vector<ProfileEntry> entries(const json& v, const std::string& ptr) {
    if (!v.is_array()) fail(ptr, "expected an array, got " + json_type_name(v));
    std::vector<ProfileEntry> out;
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(entry(v[i], ptr + "/" + std::to_string(i)));
    return out;
  }

  std::vector<std::string> conditions(const json& v, const std::string& ptr) const {
    std::istringstream words(string(v, ptr));
    std::vector<std::string> out;
    for (std::string w; words >> w;) {
      std::string atom = w[0] == '!' ? w.substr(1) : w;
      bool machine = atom.rfind("machine=", 0) == 0 && atom.size() > 8;
      if (!machine && !env_atom(atom) && !profile_atoms().count(atom))
        fail(ptr, "unknown condition '" + w + "' (known: " + comma_joined(profile_atoms()) +
                      ", machine=NAME, env:NAME, env:NAME=VALUE; ! negates)");
      out.push_back(w);
    }
    return out;
  }

  void read_into(Profile& p) {
    const json& root = object(doc_.root(), "", kTopKeys);
    if (root.contains("description")) p.description = string(root["description"], "/description");
    if (root.contains("provenance")) provenance(root["provenance"], p);
    if (root.contains("command")) command(root["command"], p);
    if (root.contains("gcc_match"))
      p.gcc_by_name = choice(root["gcc_match"], "/gcc_match", {"gcc-not-clang", "name"}) == "name";
    lists(root, "base", kBaseLists, p);
    lists(root, "torch", kTorchLists, p);
    lists(root, "device", kDeviceLists, p);
    if (root.contains("isa")) isa(root["isa"], p);
    if (root.contains("cuda")) cuda(root["cuda"], p);
  }

 private:
  void provenance(const json& v, Profile& p) const {
    object(v, "/provenance", kProvenanceKeys);
    for (const auto& [key, value] : v.items()) {
      std::string ptr = "/provenance/" + key;
      if (key != "sources") {
        p.provenance[key] = string(value, ptr);
        continue;
      }
      if (!value.is_object()) fail(ptr, "expected an object, got " + json_type_name(value));
      p.sources.clear();
      for (const auto& [list, where] : value.items())
        p.sources[list] = string(where, ptr + "/" + json_pointer_token(list));
    }
  }

  void command(const json& v, Profile& p) const {
    object(v, "/command", {"order", "spacing"});
    if (v.contains("order"))
      p.link_before_output = choice(v["order"], "/command/order",
                                    {"inductor", "link-before-output"}) == "link-before-output";
    if (v.contains("spacing"))
      p.single_spaced =
          choice(v["spacing"], "/command/spacing", {"inductor", "single"}) == "single";
  }

  void lists(const json& root, const std::string& section, const std::set<std::string>& names,
             Profile& p) {
    if (!root.contains(section)) return;
    const json& v = object(root[section], "/" + section, names);
    for (const auto& [name, list] : v.items())
      p.lists[section + "." + name] = entries(list, "/" + section + "/" + name);
  }

  void isa(const json& v, Profile& p) {
    std::set<std::string> keys = kIsaKinds;
    keys.insert({"bf16", "fp16"});
    object(v, "/isa", keys);
    for (const auto& [kind, value] : v.items()) {
      std::string ptr = "/isa/" + kind;
      if (kind == "bf16" || kind == "fp16") {
        (kind == "bf16" ? p.isa_bf16 : p.isa_fp16) = entry(value, ptr);
        continue;
      }
      if (value.is_null()) {  // the line has no such class (one it extends has)
        p.isa.erase(kind);
        continue;
      }
      object(value, ptr, {"macros", "flags"});
      ProfileIsa isa{{}, "", path_, doc_.value_position(ptr).line};
      if (value.contains("macros")) {
        if (!value["macros"].is_array())
          fail(ptr + "/macros", "expected an array, got " + json_type_name(value["macros"]));
        for (std::size_t i = 0; i < value["macros"].size(); ++i)
          isa.macros.push_back(string(value["macros"][i], ptr + "/macros/" + std::to_string(i)));
      }
      if (value.contains("flags")) isa.flags = string(value["flags"], ptr + "/flags");
      p.isa[kind] = isa;
    }
  }

  void cuda(const json& v, Profile& p) {
    object(v, "/cuda", {"libraries", "stubs"});
    if (v.contains("libraries"))
      p.lists["cuda.libraries"] = entries(v["libraries"], "/cuda/libraries");
    if (v.contains("stubs")) p.cuda_stubs = boolean(v["stubs"], "/cuda/stubs");
  }
};

bool valid_line_name(const std::string& s) {
  return !s.empty() && s.size() < 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

constexpr const char* kProfileWhat = "Inductor profile";

// At most `limit` bytes of the profile at `path`, nullopt when it cannot be
// read. With `check_trust`, refused (Error(config)) as a device file is
// when someone else could have written it: its flags become compiler
// arguments (a -B names the assembler that runs). Checked on the opened
// file and its real path, never on a name that could be swapped.
std::optional<std::string> read_profile(const std::string& path, std::size_t limit,
                                        bool check_trust) {
  if (!check_trust) {
    Result<std::string> text = read_file_up_to(path, limit);
    if (!text) return std::nullopt;
    return std::move(*text);
  }
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return std::nullopt;
  const std::string real = resolved;
  std::free(resolved);
  UniqueFd fd(::open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (Status trust = check_trusted_opened_file(fd.get(), real, path, kProfileWhat); !trust)
    throw Error(ErrorKind::config, trust.why());
  std::string text;
  char chunk[16384];
  while (text.size() < limit) {
    ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  if (text.size() > limit) text.resize(limit);
  return text;
}

void load_chain(const std::string& dir, const std::string& line, Profile& p, int depth,
                const std::string& asked_by, bool check_trust) {
  std::string path = dir + "/" + line + ".json";
  if (depth > kMaxExtendsDepth)
    throw Error(ErrorKind::config, asked_by + ": profiles extend each other in a cycle (at " +
                                       line +
                                       "); make the chain end in a profile without "
                                       "\"extends\"");
  auto text = read_profile(path, kMaxProfileBytes + 1, check_trust);
  if (!text)
    throw Error(ErrorKind::config, "cannot read profile " + path +
                                       (asked_by.empty() ? "" : " (extended by " + asked_by + ")") +
                                       "; profiles: " + dir);
  if (text->size() > kMaxProfileBytes)
    throw Error(ErrorKind::config, path + ": profile larger than 1 MiB; is this the right file?");
  p.chain.push_back(path);
  JsonDocument doc = parse_json_file_text(*text, path);
  ProfileReader reader(doc, path);
  const json& root = doc.root();
  if (!root.is_object()) reader.fail("", "expected an object, got " + json_type_name(root));
  if (!root.contains("profile")) reader.fail("", "missing key 'profile' (the Inductor line)");
  std::string name = reader.string(root["profile"], "/profile");
  if (name != line)
    reader.fail("/profile",
                "names line '" + name + "' but the file is " + line + ".json; make them agree");
  if (root.contains("extends")) {
    std::string parent = reader.string(root["extends"], "/extends");
    if (!valid_line_name(parent))
      reader.fail("/extends", "'" + parent + "' is not an Inductor line like 2.6");
    load_chain(dir, parent, p, depth + 1, path, check_trust);
    p.extends = parent;
  }
  reader.read_into(p);
  if (root.contains("provenance") && !root["provenance"].contains("sources")) p.sources.clear();
  p.name = line;
  p.file = path;
}

bool atom_holds(const Profile& profile, const std::string& atom, const ProfileFacts& f) {
  if (atom.rfind("machine=", 0) == 0) return f.machine == atom.substr(8);
  if (atom.rfind("env:", 0) == 0) {
    // env:NAME: NAME is set (even to ""); env:NAME=VALUE: it is set to VALUE. Read through the
    // environment, so a report records the variable as consulted.
    std::size_t eq = atom.find('=');
    auto value =
        f.env ? f.env->get(atom.substr(4, eq == std::string::npos ? eq : eq - 4)) : std::nullopt;
    return value && (eq == std::string::npos || *value == atom.substr(eq + 1));
  }
  auto has = [&](const char* s) { return f.compiler.find(s) != std::string::npos; };
  bool clang = has("clang");
  if (atom == "link") return f.link;
  if (atom == "debug") return f.debug;
  if (atom == "min_optimize") return f.min_optimize;
  if (atom == "warning_all") return f.warning_all;
  if (atom == "aot") return f.aot;
  if (atom == "torch") return f.torch;
  if (atom == "clang") return clang;
  if (atom == "gcc")
    return (has("gcc") || has("g++") || has("gnu-c++")) && (profile.gcc_by_name || !clang);
  if (atom == "raise_error_on_ignored_optimization") {
    // Inductor's config: os.environ.get("AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION", "1") ==
    // "1".
    auto v = f.env ? f.env->get("AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION") : std::nullopt;
    return !v || *v == "1";
  }
  return false;
}

}  // namespace

const std::set<std::string>& profile_atoms() {
  static const std::set<std::string> atoms = {
      "link",        "debug", "min_optimize",
      "warning_all", "aot",   "torch",
      "gcc",         "clang", "raise_error_on_ignored_optimization"};
  return atoms;
}

bool profile_applies(const Profile& profile, const ProfileEntry& entry, const ProfileFacts& facts) {
  for (const std::string& w : entry.when) {
    bool negated = w[0] == '!';
    if (atom_holds(profile, negated ? w.substr(1) : w, facts) == negated) return false;
  }
  return true;
}

std::vector<const ProfileEntry*> profile_entries(const Profile& profile, const std::string& list,
                                                 const ProfileFacts& facts) {
  std::vector<const ProfileEntry*> out;
  auto it = profile.lists.find(list);
  if (it == profile.lists.end()) return out;
  for (const ProfileEntry& e : it->second)
    if (profile_applies(profile, e, facts)) out.push_back(&e);
  return out;
}

std::string profile_value(const ProfileEntry& entry, const ProfileFacts& facts) {
  std::string out = entry.value;
  for (std::size_t at = out.find("${env:"); at != std::string::npos; at = out.find("${env:", at)) {
    std::size_t end = out.find('}', at);
    if (end == std::string::npos) break;
    std::string name = out.substr(at + 6, end - at - 6);
    std::string value = facts.env ? facts.env->get(name).value_or("") : "";
    out.replace(at, end + 1 - at, value);
    at += value.size();
  }
  return out;
}

Profile load_profile(const std::string& dir, const std::string& line, bool check_trust) {
  if (!valid_line_name(line))
    throw Error(ErrorKind::usage, "'" + line + "' is not an Inductor line like 2.11");
  Profile p;
  load_chain(dir, line, p, 0, "", check_trust);
  return p;
}

std::vector<std::string> profile_lines(const std::string& dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    std::string stem = it->path().stem().string();
    if (valid_line_name(stem)) lines.push_back(stem);
  }
  // By version (2.9 before 2.11), each key made once, without streams (a dry run lists them).
  std::vector<std::pair<std::vector<int>, std::string>> keyed;
  for (std::string& line : lines) {
    std::vector<int> parts;
    for (std::size_t start = 0; start < line.size();) {  // as getline: no empty last part
      std::size_t dot = std::min(line.find('.', start), line.size());
      parts.push_back(std::atoi(line.substr(start, dot - start).c_str()));
      start = dot + 1;
    }
    keyed.emplace_back(std::move(parts), std::move(line));
  }
  std::sort(keyed.begin(), keyed.end());
  lines.clear();
  for (auto& [parts, line] : keyed) lines.push_back(std::move(line));
  return lines;
}

std::string profiles_dir(const Environment& env) {
  std::string dir = data_dir(env) + "/profiles";
  // A program embedding libkbuild from a build or a staged install: the
  // configured data dir may not exist yet; the source tree's profiles do.
  if (!env.get_nonempty("KBUILD_DATA_DIR") && !is_directory(dir))
    return std::string(KBUILD_SOURCE_DATA_DIR) + "/profiles";
  return dir;
}

std::shared_ptr<const Profile> default_profile() {
  static std::once_flag once;
  static std::shared_ptr<const Profile> profile;
  std::call_once(once, [] {
    profile = std::make_shared<const Profile>(
        load_profile(profiles_dir(Environment::from_process()), "2.11"));
  });
  return profile;
}

}  // namespace kbuild

namespace kbuild {

// Each type's fields, listed once for both directions (FieldWriter and
// FieldReader, parsed_file_cache.hpp); the static_asserts stop the build when
// a struct gains a field its list lacks.
template <class Archive, FieldsOf<ProfileEntry> Self>
auto visit(Archive& a, Self& e) {
  return a(e.value, e.when, e.file, e.line);
}

template <class Archive, FieldsOf<ProfileIsa> Self>
auto visit(Archive& a, Self& isa) {
  return a(isa.macros, isa.flags, isa.file, isa.line);
}

template <class Archive, FieldsOf<Profile> Self>
auto visit(Archive& a, Self& p) {
  return a(p.name, p.file, p.extends, p.description, p.provenance, p.sources, p.link_before_output,
           p.single_spaced, p.gcc_by_name, p.lists, p.isa, p.isa_bf16, p.isa_fp16, p.cuda_stubs,
           p.chain);
}

static_assert(listed_fields<ProfileEntry> == aggregate_fields<ProfileEntry>,
              "ProfileEntry: a field is missing from its visit()");
static_assert(listed_fields<ProfileIsa> == aggregate_fields<ProfileIsa>,
              "ProfileIsa: a field is missing from its visit()");
static_assert(listed_fields<Profile> == aggregate_fields<Profile>,
              "Profile: a field is missing from its visit()");

std::string encode_profile(const Profile& p) {
  FieldWriter w;
  w(p);
  return w.take();
}

std::optional<Profile> decode_profile(const std::string& bytes) {
  FieldReader r(bytes);
  Profile p;
  r(p);
  if (!r.ok() || !r.at_end() || p.chain.empty()) return std::nullopt;
  return p;
}

Profile load_profile_cached(const std::string& dir, const std::string& line,
                            const std::string& cache_root, bool check_trust,
                            const FileSystem& files) {
  std::optional<ParsedFileCache> cache = ParsedFileCache::open(cache_root, files);
  const std::string key = dir + '\n' + line;
  if (cache)
    if (auto bytes = cache->read("profile", key))
      if (auto p = decode_profile(*bytes))
        if (p->name == line && p->chain.front() == dir + "/" + line + ".json") {
          // Remembered while the files keep their identity; who may write
          // them (a directory's mode, an ACL) is asked each time.
          if (check_trust)
            for (const std::string& file : p->chain)
              if (Status trust = check_trusted_file(file, kProfileWhat); !trust)
                throw Error(ErrorKind::config, trust.why());
          return std::move(*p);
        }
  Profile p = load_profile(dir, line, check_trust);
  if (cache)
    if (auto files = stat_files(cache->files(), p.chain))
      cache->write("profile", key, *files, encode_profile(p));
  return p;
}

}  // namespace kbuild

namespace kbuild {

namespace {

constexpr const char* kDefaultLine = "2.11";

std::pair<int, int> line_key(const std::string& line) {
  auto dot = line.find('.');
  return {std::stoi(line.substr(0, dot)), std::stoi(line.substr(dot + 1))};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : ", ") + l;
  return out;
}

// The label of a profile's evidence: its provenance's "evidence" up to the first ':'.
std::string evidence_label(const Profile& profile) {
  auto it = profile.provenance.find("evidence");
  if (it == profile.provenance.end() || it->second.empty()) return "not stated";
  return it->second.substr(0, it->second.find(':'));
}

// The line itself when it has a profile, else the nearest older one (below
// the oldest: the oldest).
std::string nearest_line(const std::vector<std::string>& lines, const std::string& wanted) {
  std::string best;
  for (const std::string& l : lines)
    if (line_key(l) <= line_key(wanted)) best = l;
  return best.empty() ? lines.front() : best;
}

}  // namespace

std::optional<std::string> inductor_line_of(const std::string& version) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) ++i;
    return i > start && i - start < 6;
  };
  if (!digits() || i >= version.size() || version[i] != '.') return std::nullopt;
  ++i;
  if (!digits()) return std::nullopt;
  return version.substr(0, i);
}

bool is_torch_version(const std::string& text) {
  std::size_t parts = 1;
  bool digit_seen = false;
  for (char c : text) {
    if (c == '.') {
      if (!digit_seen) return false;
      ++parts;
      digit_seen = false;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit_seen = true;
    } else {
      return false;
    }
  }
  return digit_seen && (parts == 2 || parts == 3) && text.size() < 24;
}

ProfileChoice choose_profile(const std::string& dir, const std::string& torch_version,
                             const std::string& chosen_by, const std::string& cache_root,
                             bool check_trust, const FileSystem& files) {
  ProfileChoice choice;
  choice.torch_version = torch_version;
  choice.chosen_by = chosen_by;
  std::string line = kDefaultLine;
  if (auto wanted = inductor_line_of(torch_version)) {
    std::vector<std::string> lines = profile_lines(dir);
    if (lines.empty())
      throw Error(ErrorKind::config, "no Inductor profile in " + dir + "; reinstall kbuild");
    line = nearest_line(lines, *wanted);
    if (line != *wanted && line_key(*wanted) > line_key(lines.back()))
      // torch 2.15 (no release file yet) and later: the newest profile, with a warning.
      choice.note = "torch " + torch_version + " (" + chosen_by +
                    ") is newer than every Inductor profile: profile " + line +
                    " stands in, and this torch's Inductor may run another command (profiles: " +
                    joined(lines) + ")";
    else if (line != *wanted)
      choice.note = "torch " + torch_version + " (" + chosen_by + ") has no Inductor profile " +
                    *wanted + "; using the nearest, " + line + " (profiles: " + joined(lines) + ")";
  } else if (!torch_version.empty()) {
    choice.note = "torch version '" + torch_version + "' (" + chosen_by +
                  ") is not MAJOR.MINOR; using Inductor profile " + line;
  }
  choice.profile = std::make_shared<const Profile>(
      load_profile_cached(dir, line, cache_root, check_trust, files));
  choice.evidence = evidence_label(*choice.profile);
  if (auto wanted = inductor_line_of(torch_version); wanted && *wanted != line)
    choice.evidence =
        "stand-in: profile " + line + " (" + choice.evidence + ") for torch " + *wanted;
  return choice;
}

ProfileChoice choose_profile_for(const std::string& dir, const std::string& torch_version_option,
                                 const Paths& paths, const std::string& cache_root,
                                 bool check_trust, const FileSystem& files) {
  if (!torch_version_option.empty()) {
    if (!is_torch_version(torch_version_option))
      throw Error(ErrorKind::usage, "--torch-version: '" + torch_version_option +
                                        "' is not a torch version like 2.9 or 2.9.1");
    return choose_profile(dir, torch_version_option, "--torch-version", cache_root, check_trust,
                          files);
  }
  if (paths.torch_root)
    if (auto v = read_package_version(*paths.torch_root + "/version.py"))
      return choose_profile(dir, *v, *paths.torch_root + "/version.py", cache_root, check_trust,
                            files);
  return choose_profile(dir, "", "default", cache_root, check_trust, files);
}

std::string describe(const ProfileChoice& choice) {
  std::string text = "Inductor profile " + choice.profile->name + " (" + choice.profile->file;
  if (!choice.torch_version.empty())
    text += "; torch " + choice.torch_version + " from " + choice.chosen_by;
  else
    text += "; no torch version known: the default line";
  return text + "; evidence: " + choice.evidence + ")";
}

}  // namespace kbuild
