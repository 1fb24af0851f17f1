#include "devices/profile_cache.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>

#include "kbuild/cache_root.hpp"
#include "kbuild/json_text.hpp"
#include "kbuild/trusted_dir.hpp"
#include "kbuild_config.h"

namespace kbuild {

namespace {

// Bump when Profile or this encoding changes.
constexpr const char* kFormat = "kbuild-profile-cache 1";
constexpr std::size_t kMaxEntryBytes = 1u << 20;

// Device, inode, size, mtime and ctime: any change to a file's bytes changes
// one of them (ctime cannot be set back). "" when it cannot be stated.
std::string stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  std::ostringstream s;
  s << st.st_dev << ':' << st.st_ino << ':' << st.st_size << ':' << st.st_mtim.tv_sec << '.'
    << st.st_mtim.tv_nsec << ':' << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec;
  return s.str();
}

// A file changed less than two seconds ago might change again within the
// file system clock's tick, unseen: such a chain is not remembered.
bool settled(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::seconds>(now).count() - st.st_mtim.tv_sec >= 2 &&
         std::chrono::duration_cast<std::chrono::seconds>(now).count() - st.st_ctim.tv_sec >= 2;
}

class Writer {
 public:
  void u32(std::uint32_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  void flag(bool b) { out_ += b ? '\1' : '\0'; }
  void entry(const ProfileEntry& e) {
    str(e.value);
    u32(static_cast<std::uint32_t>(e.when.size()));
    for (const std::string& w : e.when) str(w);
    str(e.file);
    u32(static_cast<std::uint32_t>(e.line));
  }
  void strings(const std::map<std::string, std::string>& m) {
    u32(static_cast<std::uint32_t>(m.size()));
    for (const auto& [k, v] : m) str(k), str(v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; any overrun or absurd count is a bad entry.
class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    if (!take(sizeof v)) return 0;
    std::memcpy(&v, in_.data() + pos_ - sizeof v, sizeof v);
    return v;
  }
  std::uint32_t count() {
    std::uint32_t n = u32();
    if (n > in_.size() - pos_) ok_ = false;  // every item takes at least a byte
    return ok_ ? n : 0;
  }
  std::string str() {
    std::uint32_t n = u32();
    if (!take(n)) return "";
    return in_.substr(pos_ - n, n);
  }
  bool flag() {
    if (!take(1)) return false;
    return in_[pos_ - 1] != '\0';
  }
  ProfileEntry entry() {
    ProfileEntry e;
    e.value = str();
    for (std::uint32_t i = count(); i > 0 && ok_; --i) e.when.push_back(str());
    e.file = str();
    e.line = static_cast<int>(u32());
    return e;
  }
  std::map<std::string, std::string> strings() {
    std::map<std::string, std::string> m;
    for (std::uint32_t i = count(); i > 0 && ok_; --i) {
      std::string k = str();
      m[k] = str();
    }
    return m;
  }

 private:
  bool take(std::size_t n) {
    if (!ok_ || n > in_.size() - pos_) return ok_ = false;
    pos_ += n;
    return true;
  }
  const std::string& in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// The chain's files with their stamps, as they are now.
std::string chain_stamps(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files) out += f + '=' + stamp(f) + '\n';
  return out;
}

std::string cache_name(const std::string& dir, const std::string& line) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : dir + '\n' + line) h = (h ^ c) * 1099511628211ULL;
  std::ostringstream name;
  name << "profile-" << std::hex << h << ".cbor";
  return name.str();
}

// kbuild itself: another build of it may parse profiles differently.
std::string program_identity() {
  static const std::string identity =
      std::string(kFormat) + '\n' + KBUILD_VERSION + '\n' + stamp("/proc/self/exe");
  return identity;
}

}  // namespace

std::string encode_profile(const Profile& p, const std::string& identity) {
  Writer w;
  w.str(identity);
  w.u32(static_cast<std::uint32_t>(p.chain.size()));
  for (const std::string& f : p.chain) w.str(f);
  w.str(chain_stamps(p.chain));
  w.str(p.name), w.str(p.file), w.str(p.extends), w.str(p.description);
  w.strings(p.provenance);
  w.strings(p.sources);
  w.flag(p.link_before_output), w.flag(p.single_spaced), w.flag(p.gcc_by_name);
  w.flag(p.cuda_stubs);
  w.u32(static_cast<std::uint32_t>(p.lists.size()));
  for (const auto& [name, entries] : p.lists) {
    w.str(name);
    w.u32(static_cast<std::uint32_t>(entries.size()));
    for (const ProfileEntry& e : entries) w.entry(e);
  }
  w.u32(static_cast<std::uint32_t>(p.isa.size()));
  for (const auto& [kind, isa] : p.isa) {
    w.str(kind);
    w.u32(static_cast<std::uint32_t>(isa.macros.size()));
    for (const std::string& m : isa.macros) w.str(m);
    w.str(isa.flags), w.str(isa.file);
    w.u32(static_cast<std::uint32_t>(isa.line));
  }
  for (const auto* opt : {&p.isa_bf16, &p.isa_fp16}) {
    w.flag(opt->has_value());
    if (*opt) w.entry(**opt);
  }
  return w.take();
}

std::optional<Profile> decode_profile(const std::string& bytes, const std::string& identity) {
  Reader r(bytes);
  if (r.str() != identity || !r.ok()) return std::nullopt;
  Profile p;
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) p.chain.push_back(r.str());
  // Stale when any file of the chain changed since it was parsed.
  if (p.chain.empty() || r.str() != chain_stamps(p.chain)) return std::nullopt;
  p.name = r.str(), p.file = r.str(), p.extends = r.str(), p.description = r.str();
  p.provenance = r.strings();
  p.sources = r.strings();
  p.link_before_output = r.flag(), p.single_spaced = r.flag(), p.gcc_by_name = r.flag();
  p.cuda_stubs = r.flag();
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) {
    std::vector<ProfileEntry>& entries = p.lists[r.str()];
    for (std::uint32_t j = r.count(); j > 0 && r.ok(); --j) entries.push_back(r.entry());
  }
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) {
    ProfileIsa& isa = p.isa[r.str()];
    for (std::uint32_t j = r.count(); j > 0 && r.ok(); --j) isa.macros.push_back(r.str());
    isa.flags = r.str(), isa.file = r.str();
    isa.line = static_cast<int>(r.u32());
  }
  for (auto* opt : {&p.isa_bf16, &p.isa_fp16})
    if (r.flag()) *opt = r.entry();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return p;
}

namespace {

// The cache's own directory, when the cache root already exists (a dry run
// into a fresh home creates no cache).
std::optional<TrustedDir> open_profile_cache(const std::string& cache_root) {
  if (cache_root.empty()) return std::nullopt;
  Result<TrustedDir> root = open_cache_root(cache_root, false);
  if (!root) return std::nullopt;
  Result<TrustedDir> sub = root->sub("discovery", true);
  if (!sub) return std::nullopt;
  return std::move(*sub);
}

// Entries are CBOR, as discovery's others: {"profile": <encode_profile bytes>}.
std::optional<Profile> read_entry(const TrustedDir& cache, const std::string& name) {
  Result<std::string> bytes = cache.read(name, kMaxEntryBytes);
  if (!bytes) return std::nullopt;
  std::optional<nlohmann::json> entry = parse_cbor(*bytes);
  if (!entry || !entry->is_object() || !entry->contains("profile") ||
      !(*entry)["profile"].is_binary())
    return std::nullopt;
  const auto& blob = (*entry)["profile"].get_binary();
  return decode_profile(std::string(blob.begin(), blob.end()), program_identity());
}

}  // namespace

Profile load_profile_cached(const std::string& dir, const std::string& line,
                            const std::string& cache_root) {
  std::optional<TrustedDir> cache = open_profile_cache(cache_root);
  const std::string name = cache_name(dir, line);
  if (cache)
    if (auto p = read_entry(*cache, name))
      if (p->name == line && p->chain.front() == dir + "/" + line + ".json") return std::move(*p);
  Profile p = load_profile(dir, line);
  bool all_settled = true;
  for (const std::string& f : p.chain) all_settled = all_settled && settled(f);
  if (cache && all_settled) {
    std::string bytes = encode_profile(p, program_identity());
    nlohmann::json entry{
        {"profile", nlohmann::json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()))}};
    std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(entry);
    (void)cache->write_atomically(name, std::string(cbor.begin(), cbor.end()));  // only speed
  }
  return p;
}

}  // namespace kbuild
