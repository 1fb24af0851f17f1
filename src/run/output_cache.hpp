// output_cache: the parts only the library uses (the API: kbuild/output_cache.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kbuild/trusted_dir.hpp"

// The counters of a cache root's stats.json (local hits and misses, the
// remote cache's hits, misses, errors and bytes): a build adds all of its
// counts in one update, under stats.lock, so concurrent builds lose none.
namespace kbuild {

// Field of stats.json, and how much to add to it.
using CounterIncrements = std::vector<std::pair<std::string, std::uint64_t>>;

// Adds `increments` to stats.json's fields in one locked read, add and
// replace; nothing when all are 0. A damaged stats.json starts again from 0.
// Best effort: a cache that cannot be written loses its counts, never a build.
void add_counters(const TrustedDir& root, const CounterIncrements& increments);

}  // namespace kbuild
