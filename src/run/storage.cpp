#include "run/storage.hpp"

namespace kbuild {

const char* miss_name(Miss miss) {
  switch (miss) {
    case Miss::missing: return "missing";
    case Miss::damaged: return "damaged";
    case Miss::timeout: return "timeout";
    case Miss::down: return "down";
  }
  return "missing";
}

Lookup LocalStorage::get(const EntryKey& key, int dest) {
  // A damaged local entry is removed by fetch and counts as not there.
  std::string manifest;
  std::optional<StaleInput> stale;
  if (key.env && cache_.fetch(key.local.hex, *key.env, dest, &manifest, &stale))
    return Lookup::found(false, std::move(manifest));
  return Lookup::missed(Miss::missing, "", std::move(stale));
}

Lookup LocalStorage::lease(const EntryKey&, int) {
  return Lookup::missed(Miss::missing, "");  // compile: no lease on one machine
}

Status LocalStorage::put(const EntryKey& key, const BuiltOutput& built) {
  Status stored = cache_.store(key.local, built.fd, *built.input, built.read);
  cache_.evict();
  return stored;
}

void LocalStorage::release(const EntryKey&) {}

CounterIncrements LocalStorage::take_counters() {
  return {};  // a build's hit or miss is counted by its outcome (run_build)
}

Lookup RemoteStorage::missed(const EntryKey& key, const RemoteMiss* miss) const {
  if (!key.shared()) return Lookup::missed(Miss::missing, "no remote key: " + key.shared().why());
  // How the server failed, as its store typed it where it happened (this
  // build's first failure: nothing was asked after it).
  const Faulted* failed = remote_.failed() ? &*remote_.failed() : miss ? miss->failed() : nullptr;
  if (failed)
    return Lookup::missed(failed->fault == Fault::timeout ? Miss::timeout : Miss::down,
                          failed->why);
  if (!miss) return Lookup::missed(Miss::missing, "");
  std::optional<StaleInput> stale;
  if (const StaleInput* input = miss->stale()) stale = *input;
  return Lookup::missed(miss->rejected() ? Miss::damaged : Miss::missing, miss->why(),
                        std::move(stale));
}

Lookup RemoteStorage::get(const EntryKey& key, int dest) {
  if (!key.shared() || !key.env) return missed(key, got_ ? &*got_ : nullptr);
  RemoteResult<std::string> fetched =
      remote_.fetch(*key.shared(), local_, key.local.hex, *key.env, dest);
  if (fetched) return Lookup::found(true, std::move(*fetched));
  got_ = fetched.miss();
  return missed(key, &*got_);
}

Lookup RemoteStorage::lease(const EntryKey& key, int dest) {
  if (!key.shared()) return missed(key, got_ ? &*got_ : nullptr);
  if (remote_.take_lease(*key.shared())) {
    lease_.emplace(&remote_, *key.shared());  // released by release(), or when this ends
    return missed(key, got_ ? &*got_ : nullptr);
  }
  if (!key.env) return missed(key, got_ ? &*got_ : nullptr);
  RemoteResult<std::string> waited =
      remote_.wait_for_entry(*key.shared(), local_, key.local.hex, *key.env, dest);
  if (waited) return Lookup::found(true, std::move(*waited));
  return missed(key, &waited.miss());
}

Status RemoteStorage::put(const EntryKey& key, const BuiltOutput&) {
  // Uploads what the local cache stored (checked against its manifest), so
  // the remote entry is the local one byte for byte.
  // An upload that fails is warned about (the remote cache's warning()),
  // never a failed build: the local entry stands.
  if (key.shared()) (void)remote_.store(*key.shared(), local_, key.local.hex);
  return ok();
}

void RemoteStorage::release(const EntryKey&) {
  lease_.reset();  // after the upload: those waiting find the entry
}

CounterIncrements RemoteStorage::take_counters() {
  return remote_.take_counters();
}

RemoteResult<RemoteBlob> RemoteStorage::get_blob(const std::string& name) {
  RemoteResult<RemoteBlob> blob = remote_.get(name);
  remote_.count(static_cast<bool>(blob));
  return blob;
}

Status RemoteStorage::put_blob(const std::string& name, const RemoteBlob& blob) {
  return remote_.put(name, blob);
}

RemoteResult<RemoteBlob> MultilevelStorage::get_blob(const std::string& name) {
  if (RemoteResult<RemoteBlob> near = near_.get_blob(name)) return near;
  return far_.get_blob(name);
}

Status MultilevelStorage::put_blob(const std::string& name, const RemoteBlob& blob) {
  const Status near = near_.put_blob(name, blob);
  Status far = far_.put_blob(name, blob);
  return far || !near ? far : near;
}

Lookup MultilevelStorage::get(const EntryKey& key, int dest) {
  Lookup near = near_.get(key, dest);
  if (near.hit) return near;
  Lookup far = far_.get(key, dest);
  if (!far.hit && !far.stale) far.stale = std::move(near.stale);  // what the local entry said
  return far;
}

Status MultilevelStorage::put(const EntryKey& key, const BuiltOutput& built) {
  Status stored = near_.put(key, built);
  if (!stored) return stored;  // far uploads near's entry: nothing to upload
  return far_.put(key, built);
}

CounterIncrements MultilevelStorage::take_counters() {
  CounterIncrements counters = near_.take_counters();
  for (auto& counter : far_.take_counters()) counters.push_back(std::move(counter));
  return counters;
}

StorageStack::StorageStack(OutputCache* cache, RemoteCache* remote) {
  if (!cache || !cache->enabled()) return;
  layers_.push_back(std::make_unique<LocalStorage>(*cache));
  top_ = layers_.back().get();
  if (!remote || !remote->enabled()) return;
  layers_.push_back(std::make_unique<RemoteStorage>(*remote, *cache));
  Storage* far = layers_.back().get();
  layers_.push_back(std::make_unique<MultilevelStorage>(*top_, *far));
  top_ = layers_.back().get();
}

}  // namespace kbuild
