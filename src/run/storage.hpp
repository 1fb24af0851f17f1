// Where build outputs are kept, as one interface (sccache's Storage, ccache's
// remote backends): a build asks get(), on a miss lease(), compiles, then
// put() and release(). Backends: the local cache directory and the remote
// cache (its server Redis or HTTP, remote_store.hpp, wrapped in the same
// signed and read-only layers whichever it is); the multilevel decorator
// puts the local directory in front of the remote. run_build sees only the
// Storage& that StorageStack composes from the build's settings, and tests
// give it a MockStorage (tests/support) instead.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/error.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"

namespace kbuild {

// A build's entry, under this machine's key and, with a remote cache, the
// key machines share (cache_key.hpp: shareable_key), made only when a
// backend first asks for it: a local hit hashes nothing more.
struct EntryKey {
  explicit EntryKey(CacheKey local_key, std::function<Result<std::string>()> make = nullptr)
      : local(std::move(local_key)), make_shared(std::move(make)) {}
  CacheKey local;
  std::function<Result<std::string>()> make_shared;  // null: no remote
  // The compiler's environment, which an entry's manifest is checked
  // against (the variables the build read).
  const Environment* env = nullptr;
  // The shared key, or why there is none (no remote cache, or an input
  // that cannot be read).
  const Result<std::string>& shared() const {
    if (!shared_) shared_.emplace(make_shared ? make_shared() : Failure{"no remote cache"});
    return *shared_;
  }

 private:
  mutable std::optional<Result<std::string>> shared_;
};

// Why a lookup found nothing usable.
enum class Miss {
  missing,  // no entry, or one made from inputs that differ here
  damaged,  // an entry that fails its hash or signature (dropped)
  timeout,  // the storage did not answer in time
  down,     // the storage cannot be reached
};
const char* miss_name(Miss miss);

// What get() and lease() found: on a hit the output was written to the
// build's descriptor, and the entry's manifest (what the output was built
// from) comes with it; else why not (for -v and the report).
struct Lookup {
  bool hit = false;
  bool remote = false;  // the hit came from the remote cache
  Miss miss = Miss::missing;
  std::string why;
  std::string manifest;  // on a hit: the entry's manifest (CBOR)
  // On a miss: the input of an entry found that differs here (nullopt: no
  // entry was found to check), for KBUILD_LOG and -v.
  std::optional<StaleInput> stale;
  static Lookup found(bool remote, std::string manifest) {
    return {true, remote, Miss::missing, "", std::move(manifest), std::nullopt};
  }
  static Lookup missed(Miss miss, std::string why, std::optional<StaleInput> stale = std::nullopt) {
    return {false, false, miss, std::move(why), "", std::move(stale)};
  }
};

// A finished compile to store: its output (an open descriptor) and what the
// compiler read.
struct BuiltOutput {
  int fd = -1;
  const KeyInput* input = nullptr;
  BuildInputs read;
};

class Storage {
 public:
  virtual ~Storage() = default;
  // A whole, valid entry for `key` written to `dest` from its start.
  virtual Lookup get(const EntryKey& key, int dest) = 0;
  // Called on a miss, before compiling: when another builder holds the
  // key's lease, waits for its entry (a hit, written to `dest`); else takes
  // the lease (held until release()) and answers a miss: compile.
  virtual Lookup lease(const EntryKey& key, int dest) = 0;
  // Stores `built` under `key`; a failure says why (nothing stored).
  virtual Status put(const EntryKey& key, const BuiltOutput& built) = 0;
  virtual void release(const EntryKey& key) = 0;
  // The counts since the last call, as stats.json's fields (the remote's:
  // a build's own hit or miss is counted by run_build).
  virtual CounterIncrements take_counters() = 0;

  // A small blob stored whole under a shared name, not a build's output (no
  // manifest to check, nothing written to a descriptor): kbuild isa's
  // answers. Through the same layers as a build's entries (the remote's
  // signed and read-only ones included); a layer that keeps none answers
  // absent.
  virtual RemoteResult<RemoteBlob> get_blob(const std::string& name) {
    return RemoteMiss{name, RemoteAbsent{}};
  }
  // Stores `blob` (in some layer), or says why no layer did.
  virtual Status put_blob(const std::string& /*name*/, const RemoteBlob& /*blob*/) {
    return Failure{"no layer of this storage keeps blobs"};
  }
};

// The local cache directory: no leases (builders on one machine share the
// directory, whose entries are published atomically).
class LocalStorage : public Storage {
 public:
  explicit LocalStorage(OutputCache& cache) : cache_(cache) {}
  Lookup get(const EntryKey& key, int dest) override;
  Lookup lease(const EntryKey& key, int dest) override;
  Status put(const EntryKey& key, const BuiltOutput& built) override;
  void release(const EntryKey& key) override;
  CounterIncrements take_counters() override;

 private:
  OutputCache& cache_;
};

// The remote cache under the shared key. A hit is installed in the local
// cache as it streams (one pass over a .gch of 100 MiB), and put() uploads
// the entry the local cache just stored, so this backend sits behind a
// LocalStorage in a MultilevelStorage.
class RemoteStorage : public Storage {
 public:
  RemoteStorage(RemoteCache& remote, const OutputCache& local) : remote_(remote), local_(local) {}
  Lookup get(const EntryKey& key, int dest) override;
  Lookup lease(const EntryKey& key, int dest) override;
  Status put(const EntryKey& key, const BuiltOutput& built) override;
  void release(const EntryKey& key) override;
  CounterIncrements take_counters() override;
  RemoteResult<RemoteBlob> get_blob(const std::string& name) override;
  Status put_blob(const std::string& name, const RemoteBlob& blob) override;

 private:
  // Why `key` missed: `miss` (null: nothing was asked).
  Lookup missed(const EntryKey& key, const RemoteMiss* miss) const;
  RemoteCache& remote_;
  const OutputCache& local_;
  std::optional<LeaseGuard> lease_;
  // What get() answered, which lease() repeats when it takes the lease (the
  // build's -v says why get() missed, not that a lease was taken).
  std::optional<RemoteMiss> got_;
};

// `near` in front of `far`: get() asks near, then far; lease() is far's;
// put() stores in near, then far.
class MultilevelStorage : public Storage {
 public:
  MultilevelStorage(Storage& near, Storage& far) : near_(near), far_(far) {}
  Lookup get(const EntryKey& key, int dest) override;
  Lookup lease(const EntryKey& key, int dest) override { return far_.lease(key, dest); }
  Status put(const EntryKey& key, const BuiltOutput& built) override;
  void release(const EntryKey& key) override { far_.release(key); }
  CounterIncrements take_counters() override;
  RemoteResult<RemoteBlob> get_blob(const std::string& name) override;
  Status put_blob(const std::string& name, const RemoteBlob& blob) override;

 private:
  Storage& near_;
  Storage& far_;
};

// The storage a build's settings ask for: the local cache alone, or with
// the remote cache behind it (whose store is read-only when its settings
// say so). Owns its layers; empty() when there is no enabled local cache.
class StorageStack {
 public:
  StorageStack(OutputCache* cache, RemoteCache* remote);
  bool empty() const { return top_ == nullptr; }
  Storage& top() { return *top_; }

 private:
  std::vector<std::unique_ptr<Storage>> layers_;
  Storage* top_ = nullptr;
};

}  // namespace kbuild
