// The output cache shared through a server, Redis or HTTP (remote_store),
// with the local cache in front (docs/cache.md, "The remote cache"): a
// local miss asks the server under a key
// two machines with the same toolchain and inputs share; a remote hit is
// checked (content hash, signature, the manifest's inputs on this machine),
// installed in the local cache and served from there; a compile is uploaded.
// While one builder compiles a key it holds a lease (Redis: SET NX with
// expiry) and the others wait for its entry; HTTP has none. The server
// being dead, slow or full is a miss with one warning per build, never a
// failed or hung build.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "run/output_cache.hpp"
#include "run/remote_entry.hpp"
#include "run/remote_store.hpp"
#include "util/file_system.hpp"
#include "util/process.hpp"
#include "util/redis_client.hpp"
#include "util/remote_address.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

struct RemoteCacheSettings {
  std::string url;       // "": no remote cache
  std::string from;      // where url came from: the option, the variable or the device file
  RedisAddress address;  // a redis:// or unix:// address
  std::optional<HttpAddress> http;  // an http:// or https:// one
  std::string authorization;        // HTTP: the Authorization header's value, or ""
  bool readonly = false;            // never writes: no uploads, no leases
  std::string signing_key;          // decoded seed; "": entries are not signed
  std::string verify_key;           // decoded; "": signatures are not required
  RedisTimeouts timeouts;
  std::uint64_t max_entry_bytes = 256ull << 20;  // a .gch can be 100 MiB
  std::chrono::milliseconds lease{60000};        // longest a compile holds its key
  std::chrono::milliseconds long_wait{2000};     // a wait for a lease this long is said always
  // KBUILD_REMOTE_CACHE_BASE_DIR (opt-in, ccache's base_dir): paths under it
  // are keyed and recorded as "<base>/...", so machines whose build trees
  // lie at different paths share entries; a hit then holds the writer's
  // paths in its strings and debug info (docs/cache.md).
  std::string base_dir;
};

// A device file's default address, and the file that gives it.
struct DeviceRemoteCache {
  std::string address, file;
};

// The settings from the command line (`url_flag` first, then
// KBUILD_REMOTE_CACHE, then the device file's default) and the
// KBUILD_REMOTE_CACHE_* variables. Throws Error(usage) for a bad address,
// key, timeout or size.
RemoteCacheSettings remote_cache_settings(const std::string& url_flag, bool readonly_flag,
                                          const Environment& env,
                                          const DeviceRemoteCache& device = {});

RemoteStats remote_stats(const TrustedDir& root);

// An entry's two parts: the manifest (the local cache's CBOR) and the bytes.
struct RemoteBlob {
  std::string manifest, bytes;
};

// Why the remote cache gave no entry, as each call answers it (no state
// is read after the call). An entry refused (RemoteRejected) is warned about
// once per build and dropped where the store writes.
struct RemoteAbsent {};  // none, or one this reader does not take (too large, a write here failed)
struct RemoteRejected {
  // "is damaged (truncated or altered)", "has a bad signature", "is not signed"
  std::string problem;
};
struct RemoteMiss {
  // Nothing usable; an entry built from inputs that differ here (a damaged
  // manifest is StaleKind::damaged); an entry refused; or the server failed
  // (nothing more is asked of it this build: RemoteCache::failed()).
  using Reason = std::variant<RemoteAbsent, StaleInput, RemoteRejected, Faulted>;
  std::string key;  // the remote key asked
  Reason reason;

  const StaleInput* stale() const { return std::get_if<StaleInput>(&reason); }
  const RemoteRejected* rejected() const { return std::get_if<RemoteRejected>(&reason); }
  const Faulted* failed() const { return std::get_if<Faulted>(&reason); }
  // One line for -v: the key's first 12 hex digits (to compare across
  // machines) and why; the server's own line when it failed.
  std::string why() const;
};

// A value, or the RemoteMiss that says why there is none. The shape of
// Result<T> (`if (!r) r.miss()`), with the typed reason.
template <class T>
class [[nodiscard]] RemoteResult {
 public:
  RemoteResult(T value) : value_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  RemoteResult(RemoteMiss miss) : miss_(std::move(miss)) {}  // NOLINT(google-explicit-constructor)

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // Why there is no value (ask operator bool first).
  const RemoteMiss& miss() const { return miss_; }

 private:
  std::optional<T> value_;
  RemoteMiss miss_;
};

// The server the settings name, connected: HTTP's store (its helper starts
// at the first exchange, through `processes`), or Redis's on a new connection.
ServerResult<std::unique_ptr<RemoteStore>> connect_remote_store(
    const RemoteCacheSettings& settings, ProcessRunner& processes = real_processes());

// `backend` in the layers the settings ask for, the same for every backend
// (a test's too): signed_store with a signing or verify key, then
// readonly_store when read-only (outermost: nothing is signed for nothing).
std::unique_ptr<RemoteStore> remote_store_layers(const RemoteCacheSettings& settings,
                                                 std::unique_ptr<RemoteStore> backend);

// How a RemoteCache reaches its server: connect_remote_store, or a test's
// store (a RedisStore on a socketpair to a fake server that speaks RESP).
using RemoteStoreConnector =
    std::function<ServerResult<std::unique_ptr<RemoteStore>>(const RemoteCacheSettings&)>;

// What a wait for another builder's compile says as it goes, for the build
// to pass to its listener (the library prints nothing): once when it
// starts (`long_wait` false: -v), and once more when it has lasted the
// settings' long_wait (`long_wait`: worth saying without -v).
struct WaitNotice {
  std::string line;
  bool long_wait = false;
};

class RemoteCache {
 public:
  // A fetched entry's inputs are checked here through `files`.
  explicit RemoteCache(RemoteCacheSettings settings, RemoteStoreConnector connect = nullptr,
                       const FileSystem& files = system_file_system())
      : settings_(std::move(settings)), connect_(std::move(connect)), files_(files) {}
  bool enabled() const { return !settings_.url.empty(); }
  // Whether builders that miss the same key take turns (the server takes
  // leases), and, when they do not, why and what it costs (for -v and the
  // report); "" with leases.
  bool leases() const { return !settings_.http; }
  std::string lease_note() const;
  const RemoteCacheSettings& settings() const { return settings_; }

  // On a valid remote entry for `remote_key`: its output written to `dest`
  // (from the start), the entry installed in `local` under `local_key`, and
  // its manifest (as installed) answered; else why not.
  // `env`: the compiler's environment, which the manifest's variables are
  // checked against.
  RemoteResult<std::string> fetch(const std::string& remote_key, const OutputCache& local,
                                  const std::string& local_key, const Environment& env, int dest);
  // Uploads the local entry `local_key` under `remote_key`; ok when it was
  // stored, or need not be (read-only, stored meanwhile). A failure says
  // why it is not shared, and is this build's warning too (the first).
  Status store(const std::string& remote_key, const OutputCache& local,
               const std::string& local_key);

  // The entry under `remote_key` once its hash (and signature, with a verify
  // key) hold; a damaged or unsigned one is rejected, warned about and
  // dropped. The caller checks the manifest's inputs.
  RemoteResult<RemoteBlob> get(const std::string& remote_key);
  // Stores `blob` (hashed, signed with a signing key) under `remote_key`; a
  // failure says why nothing was stored (read-only, too large, the server
  // failed).
  Status put(const std::string& remote_key, const RemoteBlob& blob);

  // Takes the compile lease for `remote_key`: true when this builder should
  // compile (it holds the lease, or leases cannot be had); false when
  // another builder holds it.
  bool take_lease(const std::string& remote_key);
  void release_lease(const std::string& remote_key);
  // Waits (at most the lease time) for another builder's entry: fetch's
  // answer once it arrived; absent when its lease ended without one (that
  // builder died or failed) or the wait ran out. An interrupt ends the wait
  // at once: Error(interrupted).
  RemoteResult<std::string> wait_for_entry(const std::string& remote_key, const OutputCache& local,
                                           const std::string& local_key, const Environment& env,
                                           int dest);

  // Who hears of a wait for another builder's compile (null: nobody).
  void on_wait(std::function<void(const WaitNotice&)> notice) { on_wait_ = std::move(notice); }

  // Counts a lookup made through get() (kbuild isa's shared answers).
  void count(bool hit) { ++(hit ? counts_.hits : counts_.misses); }

  // Per-build state, not a call's answer (each call answers its own miss):
  // the first problem this build met ("" when none), its one warning.
  const std::string& warning() const { return warning_; }
  // The server failed this build (nothing more is asked of it): how, as
  // the store said (never read from the message), and why; nothing while
  // it has not.
  const std::optional<Faulted>& failed() const { return failed_; }
  // Adds this build's counts to the local cache's stats and clears them.
  void save_stats(const OutputCache& local);
  // This build's counts as stats.json's fields (to add with the local
  // cache's own in one update), cleared.
  std::vector<std::pair<std::string, std::uint64_t>> take_counters();

 private:
  // The server's store, connected at the first use; null once it failed.
  RemoteStore* store();
  bool stored_meanwhile(const std::string& remote_key);
  // Remembers the first failure (nothing more is tried) and returns it.
  Faulted fail(const Faulted& faulted);
  std::string entry_problem(const std::string& remote_key, const Result<RemoteEntry>& e) const;
  // One warning; the entry deleted when the store writes. Returns the miss.
  RemoteMiss reject(const std::string& remote_key, const std::string& bytes,
                    const std::string& problem);
  // The entry's bytes under `remote_key`, or why none (absent, refused by
  // a layer, the server failed).
  RemoteResult<std::string> download(const std::string& remote_key);

  RemoteCacheSettings settings_;
  RemoteStoreConnector connect_;
  const FileSystem& files_;
  std::unique_ptr<RemoteStore> store_;
  // The key of an entry this build found damaged but could not remove: its
  // upload replaces it (without asking first whether one is there).
  std::string replace_key_;
  std::optional<Faulted> failed_;  // after the first failure nothing more is tried
  std::string warning_;
  std::string stop_using() const;
  std::string lease_token_;
  RemoteStats counts_;
  std::function<void(const WaitNotice&)> on_wait_;
  void say_wait(const std::string& remote_key, std::chrono::steady_clock::duration waited,
                bool long_wait) const;
};

// Releases a lease when the compile ends, also by an exception.
class LeaseGuard {
 public:
  LeaseGuard(RemoteCache* remote, std::string key) : remote_(remote), key_(std::move(key)) {}
  ~LeaseGuard() {
    try {
      if (remote_) remote_->release_lease(key_);
    } catch (const std::exception&) {  // a second Ctrl-C: the lease expires on its own
    }
  }
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;

 private:
  RemoteCache* remote_;
  std::string key_;
};

}  // namespace kbuild
