// A Storage (run/storage.hpp) in memory, which tests script: entries by
// local key, a get() that fails as a dead, slow or damaged backend would,
// another builder holding the lease (and its entry arriving, or not), a
// put() refused. It records the calls a build made, in order. A put()
// keeps the output and, as the real backends do, a manifest of what the
// compiler read (a hit hands it back).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/input_manifest.hpp"
#include "run/output_cache.hpp"
#include "run/storage.hpp"

namespace kbuild_test {

class MockStorage : public kbuild::Storage {
 public:
  std::map<std::string, std::string> entries;    // local key -> output bytes
  std::map<std::string, std::string> manifests;  // local key -> its manifest (CBOR)
  std::optional<kbuild::Miss> fail_get;          // every get() misses so
  bool silent_lease = false;       // lease(): a miss that says nothing, no lease (get's why stands)
  bool other_holds_lease = false;  // lease(): another builder compiles...
  std::optional<std::string> arrives;  // ...and this entry arrives (else none)
  // ...with this manifest (by default one that read nothing and printed nothing)
  std::string arrives_manifest = *kbuild::with_replay(kbuild::manifest_bytes(kbuild::Manifest{}),
                                                      kbuild::CompilerOutput{}, std::nullopt);
  std::optional<std::string> refuse_put;  // put() fails, saying this
  std::vector<std::string> calls;         // "get", "lease", "put", "release"
  int leases_held = 0;
  std::uint64_t lookups = 0;

  kbuild::Lookup get(const kbuild::EntryKey& key, int dest) override {
    calls.emplace_back("get");
    ++lookups;
    if (fail_get) return kbuild::Lookup::missed(*fail_get, "mock: failed");
    auto it = entries.find(key.local.hex);
    if (it == entries.end()) return kbuild::Lookup::missed(kbuild::Miss::missing, "mock: none");
    write_to(dest, it->second);
    return kbuild::Lookup::found(false, manifests[key.local.hex]);
  }
  kbuild::Lookup lease(const kbuild::EntryKey&, int dest) override {
    calls.emplace_back("lease");
    if (silent_lease) return kbuild::Lookup::missed(kbuild::Miss::missing, "");
    if (!other_holds_lease) {
      ++leases_held;
      return kbuild::Lookup::missed(kbuild::Miss::missing, "mock: lease taken");
    }
    if (!arrives)
      return kbuild::Lookup::missed(kbuild::Miss::missing, "mock: their lease ended empty");
    write_to(dest, *arrives);
    return kbuild::Lookup::found(true, arrives_manifest);
  }
  kbuild::Status put(const kbuild::EntryKey& key, const kbuild::BuiltOutput& built) override {
    calls.emplace_back("put");
    if (refuse_put) return kbuild::Failure{*refuse_put};
    std::string bytes;
    char buf[4096];
    ssize_t n = 0;
    for (off_t at = 0; (n = ::pread(built.fd, buf, sizeof buf, at)) > 0; at += n)
      bytes.append(buf, static_cast<std::size_t>(n));
    entries[key.local.hex] = bytes;
    manifests[key.local.hex] = built.read.manifest;
    return kbuild::ok();
  }
  void release(const kbuild::EntryKey&) override {
    calls.emplace_back("release");
    if (leases_held > 0) --leases_held;
  }
  kbuild::CounterIncrements take_counters() override {
    kbuild::CounterIncrements counters{{"mock_lookups", lookups}};
    lookups = 0;
    return counters;
  }

 private:
  static void write_to(int dest, const std::string& bytes) {
    if (::ftruncate(dest, 0) != 0 || ::pwrite(dest, bytes.data(), bytes.size(), 0) < 0)
      throw std::runtime_error("mock storage: cannot write the output");
  }
};

}  // namespace kbuild_test
