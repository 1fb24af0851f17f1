#include "devices/profile_cache.hpp"

#include <cstdint>
#include <optional>

#include "util/parsed_file_cache.hpp"

namespace kbuild {

namespace {

void write_entry(ByteWriter& w, const ProfileEntry& e) {
  w.str(e.value);
  w.strings(e.when);
  w.str(e.file);
  w.u32(static_cast<std::uint32_t>(e.line));
}

ProfileEntry read_entry(ByteReader& r) {
  ProfileEntry e;
  e.value = r.str();
  e.when = r.string_list();
  e.file = r.str();
  e.line = static_cast<int>(r.u32());
  return e;
}

}  // namespace

std::string encode_profile(const Profile& p) {
  ByteWriter w;
  w.strings(p.chain);
  w.str(p.name), w.str(p.file), w.str(p.extends), w.str(p.description);
  w.strings(p.provenance);
  w.strings(p.sources);
  w.flag(p.link_before_output), w.flag(p.single_spaced), w.flag(p.gcc_by_name);
  w.flag(p.cuda_stubs);
  w.u32(static_cast<std::uint32_t>(p.lists.size()));
  for (const auto& [name, entries] : p.lists) {
    w.str(name);
    w.u32(static_cast<std::uint32_t>(entries.size()));
    for (const ProfileEntry& e : entries) write_entry(w, e);
  }
  w.u32(static_cast<std::uint32_t>(p.isa.size()));
  for (const auto& [kind, isa] : p.isa) {
    w.str(kind);
    w.strings(isa.macros);
    w.str(isa.flags), w.str(isa.file);
    w.u32(static_cast<std::uint32_t>(isa.line));
  }
  for (const auto* opt : {&p.isa_bf16, &p.isa_fp16}) {
    w.flag(opt->has_value());
    if (*opt) write_entry(w, **opt);
  }
  return w.take();
}

std::optional<Profile> decode_profile(const std::string& bytes) {
  ByteReader r(bytes);
  Profile p;
  p.chain = r.string_list();
  if (p.chain.empty()) return std::nullopt;
  p.name = r.str(), p.file = r.str(), p.extends = r.str(), p.description = r.str();
  p.provenance = r.string_map();
  p.sources = r.string_map();
  p.link_before_output = r.flag(), p.single_spaced = r.flag(), p.gcc_by_name = r.flag();
  p.cuda_stubs = r.flag();
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) {
    std::vector<ProfileEntry>& entries = p.lists[r.str()];
    for (std::uint32_t j = r.count(); j > 0 && r.ok(); --j) entries.push_back(read_entry(r));
  }
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) {
    ProfileIsa& isa = p.isa[r.str()];
    isa.macros = r.string_list();
    isa.flags = r.str(), isa.file = r.str();
    isa.line = static_cast<int>(r.u32());
  }
  for (auto* opt : {&p.isa_bf16, &p.isa_fp16})
    if (r.flag()) *opt = read_entry(r);
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return p;
}

Profile load_profile_cached(const std::string& dir, const std::string& line,
                            const std::string& cache_root) {
  std::optional<ParsedFileCache> cache = ParsedFileCache::open(cache_root);
  const std::string key = dir + '\n' + line;
  if (cache)
    if (auto bytes = cache->read("profile", key))
      if (auto p = decode_profile(*bytes))
        if (p->name == line && p->chain.front() == dir + "/" + line + ".json") return std::move(*p);
  Profile p = load_profile(dir, line);
  if (cache)
    if (auto files = stat_files(p.chain)) cache->write("profile", key, *files, encode_profile(p));
  return p;
}

}  // namespace kbuild
