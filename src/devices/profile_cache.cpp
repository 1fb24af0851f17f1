#include "devices/profile_cache.hpp"

#include <cstdint>
#include <optional>

#include "util/parsed_file_cache.hpp"

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
