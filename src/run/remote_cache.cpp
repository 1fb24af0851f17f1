#include "run/remote_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "kbuild/error.hpp"
#include "run/cache_key.hpp"
#include "run/http_store.hpp"
#include "run/input_manifest.hpp"
#include "run/output_cache.hpp"
#include "run/readonly_store.hpp"
#include "run/redis_store.hpp"
#include "run/remote_entry.hpp"
#include "run/signed_store.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace fs = std::filesystem;

namespace {

std::string random_token() {
  static std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(::getpid()) + "." + std::to_string(rng());
}

// A positive whole number from `name`, at most `max`; `fallback` when unset.
std::uint64_t env_number(const Environment& env, const char* name, const char* unit,
                         std::uint64_t max, std::uint64_t fallback) {
  auto text = env.get_nonempty(name);
  if (!text) return fallback;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end != text->data() + text->size() || v == 0 || v > max)
    throw Error(ErrorKind::usage, std::string(name) + ": '" + *text + "' is not a number of " +
                                      unit + " above 0 (at most " + std::to_string(max) +
                                      "); fix or unset it");
  return v;
}

std::chrono::milliseconds env_ms(const Environment& env, const char* name,
                                 std::chrono::milliseconds fallback) {
  return std::chrono::milliseconds(env_number(env, name, "milliseconds", 86400000,
                                              static_cast<std::uint64_t>(fallback.count())));
}

// The base dir as keys use it: absolute, normal, no trailing slash, a
// directory, and not the root (which would hide every path).
std::string base_dir_setting(const std::string& value) {
  const char* what = "KBUILD_REMOTE_CACHE_BASE_DIR";
  fs::path dir = fs::path(value).lexically_normal();
  std::string text = dir.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  std::error_code ec;
  if (value.empty() || !dir.is_absolute())
    throw Error(ErrorKind::usage, std::string(what) + "='" + value +
                                      "' is not an absolute path; give the directory that holds "
                                      "the build trees (or unset it)");
  if (text == "/")
    throw Error(ErrorKind::usage, std::string(what) + "='" + value +
                                      "' is the root, which would take every path for the same "
                                      "on every machine; give the directory that holds the "
                                      "build trees");
  if (!fs::is_directory(text, ec))
    throw Error(ErrorKind::usage, std::string(what) + "='" + value +
                                      "' is not a directory here; create it or unset the variable");
  return text;
}

std::uint64_t field(const nlohmann::json& j, const char* name) {
  return j.contains(name) && j[name].is_number_unsigned() ? j[name].get<std::uint64_t>() : 0;
}

}  // namespace

RemoteCacheSettings remote_cache_settings(const std::string& url_flag, bool readonly_flag,
                                          const Environment& env, const DeviceRemoteCache& device) {
  RemoteCacheSettings s;
  auto from_env = env.get_nonempty("KBUILD_REMOTE_CACHE");
  if (!url_flag.empty()) {
    s.url = url_flag;
    s.from = "--remote-cache";
  } else if (from_env) {
    s.url = *from_env;
    s.from = "KBUILD_REMOTE_CACHE";
  } else if (!device.address.empty()) {
    s.url = device.address;
    s.from = "remote_cache in " + device.file;
  }
  // The variable too: compiler mode (kbuild cc, a masquerade link) has no flags.
  s.readonly =
      readonly_flag || env.get_nonempty("KBUILD_REMOTE_CACHE_READONLY").value_or("0") != "0";
  if (s.url.empty()) return s;
  if (is_http_address(s.url)) {
    Result<HttpAddress> http = parse_http_url(s.url);
    if (!http)
      throw Error(ErrorKind::usage, s.from + ": '" + redact_address(s.url) + "': " + http.why());
    s.http = *http;
    s.authorization = env.get_nonempty("KBUILD_REMOTE_CACHE_AUTHORIZATION").value_or("");
  } else {
    if (Status known = check_remote_address(s.url); !known)
      throw Error(ErrorKind::usage, s.from + ": '" + redact_address(s.url) + "': " + known.why());
    s.address = *parse_redis_url(s.url);
  }
  if (auto hex = env.get_nonempty("KBUILD_REMOTE_CACHE_SIGNING_KEY")) {
    Result<std::string> key = decode_signing_key(*hex, "KBUILD_REMOTE_CACHE_SIGNING_KEY");
    if (!key) throw Error(ErrorKind::usage, key.why());
    s.signing_key = *key;
    s.verify_key = public_key_of(*key);  // a writer reads what it signs
  }
  if (auto hex = env.get_nonempty("KBUILD_REMOTE_CACHE_VERIFY_KEY")) {
    Result<std::string> key = decode_verify_key(*hex, "KBUILD_REMOTE_CACHE_VERIFY_KEY");
    if (!key) throw Error(ErrorKind::usage, key.why());
    if (!s.signing_key.empty() && *key != s.verify_key)
      throw Error(ErrorKind::usage,
                  "KBUILD_REMOTE_CACHE_VERIFY_KEY is not the public key of "
                  "KBUILD_REMOTE_CACHE_SIGNING_KEY; give the pair kbuild cache keygen printed");
    s.verify_key = *key;
  }
  // A reader: holding only the verify key, it cannot sign, so every verifier
  // would refuse what it uploads, and an entry it refuses may be signed with
  // a key it was not given. It writes and removes nothing (read-only).
  if (s.signing_key.empty() && !s.verify_key.empty()) s.readonly = true;
  s.timeouts.connect = env_ms(env, "KBUILD_REMOTE_CACHE_CONNECT_TIMEOUT_MS", s.timeouts.connect);
  s.timeouts.operation = env_ms(env, "KBUILD_REMOTE_CACHE_TIMEOUT_MS", s.timeouts.operation);
  s.lease = env_ms(env, "KBUILD_REMOTE_CACHE_LEASE_MS", s.lease);
  // Redis strings end at 512 MiB.
  s.max_entry_bytes = env_number(env, "KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES", "bytes", 512ull << 20,
                                 s.max_entry_bytes);
  if (auto base = env.get("KBUILD_REMOTE_CACHE_BASE_DIR")) s.base_dir = base_dir_setting(*base);
  return s;
}

ServerResult<std::unique_ptr<RemoteStore>> connect_remote_store(const RemoteCacheSettings& settings,
                                                                ProcessRunner& processes) {
  if (settings.http)
    return std::unique_ptr<RemoteStore>(std::make_unique<HttpStore>(
        HttpSettings{*settings.http, settings.authorization, settings.timeouts.connect,
                     settings.timeouts.operation, settings.max_entry_bytes},
        processes));
  ServerResult<RedisClient> client =
      RedisClient::connect(settings.address, settings.timeouts, settings.max_entry_bytes);
  if (!client) return client.faulted();
  return std::unique_ptr<RemoteStore>(std::make_unique<RedisStore>(std::move(*client)));
}

std::unique_ptr<RemoteStore> remote_store_layers(const RemoteCacheSettings& settings,
                                                 std::unique_ptr<RemoteStore> backend) {
  if (!settings.signing_key.empty() || !settings.verify_key.empty())
    backend = std::make_unique<SignedStore>(std::move(backend), settings.signing_key,
                                            settings.verify_key);
  if (settings.readonly) backend = std::make_unique<ReadOnlyStore>(std::move(backend));
  return backend;
}

RemoteStore* RemoteCache::store() {
  if (failed_ || !enabled()) return nullptr;
  if (store_) return store_.get();
  ServerResult<std::unique_ptr<RemoteStore>> connected =
      connect_ ? connect_(settings_) : connect_remote_store(settings_);
  if (!connected) {
    fail(connected.faulted());
    return nullptr;
  }
  store_ = remote_store_layers(settings_, std::move(*connected));
  return store_.get();
}

std::string RemoteCache::lease_note() const {
  if (!enabled() || leases()) return "";
  return "no leases over HTTP (it has no atomic set-if-absent): machines that miss a new key at "
         "the same time each compile it";
}

// How to stop using the remote cache, where its address came from.
std::string RemoteCache::stop_using() const {
  if (settings_.from == "KBUILD_REMOTE_CACHE") return "unset KBUILD_REMOTE_CACHE";
  if (settings_.from.rfind("remote_cache in ", 0) == 0)
    return "remove the remote_cache " + settings_.from.substr(13) + ", or give --no-cache";
  return "drop --remote-cache";
}

std::string RemoteMiss::why() const {
  if (const Faulted* faulted = failed()) return faulted->why;
  const std::string shown = "remote key " + key.substr(0, 12);
  if (const StaleInput* input = stale())
    return shown + ": its entry was built from files that differ here (" + describe(*input) + ")";
  return shown + ": no usable entry";
}

Faulted RemoteCache::fail(const Faulted& faulted) {
  ++counts_.errors;
  const std::string& why = faulted.why;
  if (!failed_) failed_ = faulted;  // one timeout per build at most: nothing more is asked
  if (warning_.empty())
    warning_ = "remote cache " + redact_address(settings_.url) + ": " + why +
               "; building without it (check the server, or " + stop_using() + ")";
  store_.reset();
  return *failed_;
}

RemoteResult<std::string> RemoteCache::download(const std::string& remote_key) {
  RemoteStore* s = store();
  if (!s && failed_) return RemoteMiss{remote_key, *failed_};
  if (!s) return RemoteMiss{remote_key, RemoteAbsent{}};  // no remote cache
  ServerResult<std::optional<FetchedEntry>> value = s->get(remote_key);
  if (!value) return RemoteMiss{remote_key, fail(value.faulted())};
  if (!*value) return RemoteMiss{remote_key, RemoteAbsent{}};
  FetchedEntry& fetched = **value;
  counts_.bytes_down += fetched.bytes.size();
  // A layer's verdict (signed_store's).
  if (!fetched.refused.empty()) return reject(remote_key, fetched.bytes, fetched.refused);
  return std::move(fetched.bytes);
}

// Why `e` (parsed from the bytes read) cannot be used, decided before any
// of it is decompressed: not an entry, or its digest not that of its bytes
// (the signature, which vouches for the digest, is signed_store's).
std::string RemoteCache::entry_problem(const std::string& remote_key,
                                       const Result<RemoteEntry>& e) const {
  if (!e || !remote_digest_holds(remote_key, *e)) return "is damaged (truncated or altered)";
  return "";
}

RemoteMiss RemoteCache::reject(const std::string& remote_key, const std::string& bytes,
                               const std::string& problem) {
  RemoteStore* s = store();
  if (s && !s->writes()) s = nullptr;  // read-only: kept
  if (warning_.empty())
    warning_ = "remote cache entry " + remote_key + " " + problem + "; not used" +
               (!s             ? ""
                : s->removes() ? ", dropped"
                               : ", replaced by this build's upload");
  if (s && s->removes()) (void)s->remove_if(remote_key, bytes);
  if (s && !s->removes()) replace_key_ = remote_key;
  return RemoteMiss{remote_key, RemoteRejected{problem}};
}

RemoteResult<RemoteBlob> RemoteCache::get(const std::string& remote_key) {
  RemoteResult<std::string> bytes = download(remote_key);
  if (!bytes) return bytes.miss();
  Result<RemoteEntry> e = parse_remote_entry(*bytes);
  // Decompressed into one buffer of the size the frame records; larger than
  // this reader accepts is a plain miss (another machine's larger limit).
  if (e && zstd_content_size(e->compressed).value_or(0) > settings_.max_entry_bytes)
    return RemoteMiss{remote_key, RemoteAbsent{}};
  std::string problem = entry_problem(remote_key, e);
  Result<std::string> output = problem.empty()
                                   ? zstd_decompress(e->compressed, settings_.max_entry_bytes)
                                   : Result<std::string>(Failure{problem});
  if (problem.empty() && !output) problem = "is damaged (truncated or altered)";
  if (!problem.empty()) return reject(remote_key, *bytes, problem);
  return RemoteBlob{std::string(e->manifest), std::move(*output)};
}

RemoteResult<std::string> RemoteCache::fetch(const std::string& remote_key,
                                             const OutputCache& local, const std::string& local_key,
                                             const Environment& env, int dest) {
  if (!local.root()) return RemoteMiss{remote_key, RemoteAbsent{}};  // nowhere to install it
  auto miss = [this, &remote_key](RemoteMiss::Reason reason = RemoteAbsent{}) {
    ++counts_.misses;
    return RemoteMiss{remote_key, std::move(reason)};
  };
  RemoteResult<std::string> fetched = download(remote_key);
  if (!fetched) return miss(fetched.miss().reason);
  const std::string* bytes = &*fetched;
  Result<RemoteEntry> e = parse_remote_entry(*bytes);
  // 0 when the frame records no size: zstd_decompress_to refuses it below.
  const std::size_t size = e ? zstd_content_size(e->compressed).value_or(0) : 0;
  if (size > settings_.max_entry_bytes) return miss();  // another machine's limit
  if (std::string problem = entry_problem(remote_key, e); !problem.empty())
    return miss(reject(remote_key, *bytes, problem).reason);
  // The headers and libraries the writer's compiler read must be the same
  // here (else this machine would build something else): a plain miss.
  // The digest and signature checked above cover it: checking it here
  // only reads this machine's files.
  // With the base-dir opt-in the writer's paths under its base are
  // "<base>/..." in the entry: this machine's own files are checked.
  Result<Manifest> here = read_manifest(e->manifest);  // its views into `fetched`
  if (here && !settings_.base_dir.empty() &&
      !rebase_manifest(*here, kBasePlaceholder, settings_.base_dir))
    here = Failure{"its dependency file is damaged"};
  std::optional<StaleInput> stale;
  if (here) stale = restamp_here(*here, env, files_);  // by content: its stamps prove nothing here
  // Without what the compiler printed the entry is not whole (a writer that
  // dropped it): a miss.
  if (!here || stale || !here->diagnostics)
    return miss(stale.value_or(StaleInput{}));  // StaleInput{}: the manifest is damaged
  // The output (its frame checked above) is decompressed a MiB at a time
  // into the build's output and the local cache's staged entry: the whole
  // never sits in memory (a .gch is 100-150 MB).
  Result<StagedEntry> staged = local.stage_entry();
  if (!staged || ::ftruncate(dest, 0) != 0 || ::lseek(dest, 0, SEEK_SET) != 0) return miss();
  bool damaged = false;
  // A local cache that compresses keeps the frame as it came; else the
  // bytes go to its entry as they are decompressed.
  const bool keep_frame = local.compresses();
  Status written = zstd_decompress_to(
      e->compressed, settings_.max_entry_bytes,
      [&](std::string_view chunk) -> Status {
        if (Status s = write_all(dest, chunk, "output"); !s) return s;
        return keep_frame ? ok() : write_all(staged->output.get(), chunk, "output");
      },
      damaged);
  const bool whole = static_cast<bool>(written);
  // This machine's paths and stamps, and how the local cache keeps the output.
  here->compressed = keep_frame;
  const std::string local_manifest = manifest_bytes(*here);
  if (whole && keep_frame) written = write_all(staged->output.get(), e->compressed, "output");
  if (!whole || !written) {
    if (::ftruncate(dest, 0) != 0) {
    }  // the build writes its own output next
    local.discard_entry(*staged);
    // Dropped only when the frame was at fault, not a write here.
    if (!whole && damaged)
      return miss(reject(remote_key, *bytes, "is damaged (truncated or altered)").reason);
    return miss();
  }
  (void)local.install_entry(local_key, *staged, local_manifest);
  ++counts_.hits;
  return local_manifest;
}

namespace {

// A local entry as the remote stores it: its output as the compiler wrote
// it (a compressed entry's frame expanded) and its manifest without the
// local "compression"; nothing when the output is not what the manifest
// says (a local entry damaged since it was stored is never uploaded).
Result<RemoteBlob> uploadable(const std::string& manifest, std::string output,
                              std::size_t max_bytes) {
  Result<Manifest> shared = read_manifest(manifest);
  if (!shared) return Failure{"its manifest is damaged: " + shared.why()};
  if (!shared->size || !shared->digest) return Failure{"its manifest names no output"};
  if (shared->compressed) {
    Result<std::string> expanded = zstd_decompress(output, max_bytes);
    if (!expanded) return Failure{"its output cannot be expanded: " + expanded.why()};
    output = std::move(*expanded);
    shared->compressed = false;
  }
  if (*shared->size != output.size() || *shared->digest != digest_hex(output))
    return Failure{"its output is not the one its manifest names"};
  // Without this machine's stamps and values: a reader checks its own.
  make_shareable(*shared);
  return RemoteBlob{manifest_bytes(*shared), std::move(output)};
}

}  // namespace

Status RemoteCache::store(const std::string& remote_key, const OutputCache& local,
                          const std::string& local_key) {
  if (!local.root()) return ok();
  if (failed_) return Failure{failed_->why};  // warned about when it failed
  // A store that writes nothing (read-only): the entry is not even read.
  if (RemoteStore* s = store(); !s || !s->writes()) return ok();
  // Kept here, not shared: said once (a warning), never a failed build.
  auto not_shared = [&](const std::string& why) -> Failure {
    std::string line =
        "the cache entry " + local_key + " is not shared through the remote cache: " + why;
    if (warning_.empty()) warning_ = line;
    return Failure{std::move(line)};
  };
  Result<StoredEntry> entry = local.read_entry(local_key, settings_.max_entry_bytes);
  if (!entry)  // larger than the remote's limit, or gone
    return not_shared(entry.why() + " (KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES is " +
                      std::to_string(settings_.max_entry_bytes) + ")");
  Result<RemoteBlob> blob =
      uploadable(entry->manifest, std::move(entry->output), settings_.max_entry_bytes);
  if (!blob) return not_shared(blob.why());
  if (!settings_.base_dir.empty()) {
    std::optional<std::string> shared =
        rebase_manifest(blob->manifest, settings_.base_dir, kBasePlaceholder);
    if (!shared) return not_shared("its manifest cannot be written under the base dir");
    blob->manifest = std::move(*shared);
  }
  if (stored_meanwhile(remote_key)) return ok();
  return put(remote_key, *blob);  // a failed upload is this build's warning (fail)
}

// Without leases another machine may have uploaded the entry since this
// build missed it: asked first (HEAD), so that a 100 MiB .gch is not sent
// twice. Not when this build found it damaged: its upload replaces it.
bool RemoteCache::stored_meanwhile(const std::string& remote_key) {
  RemoteStore* s = store();
  if (!s || s->leases() || remote_key == replace_key_) return false;
  ServerResult<bool> there = s->exists(remote_key);
  if (!there) {
    fail(there.faulted());
    return true;
  }
  return *there;
}

Status RemoteCache::put(const std::string& remote_key, const RemoteBlob& blob) {
  const std::string too_large = "larger than the remote cache's limit (" +
                                human_size(settings_.max_entry_bytes) +
                                ", KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES)";
  if (failed_) return Failure{"the remote cache failed this build: " + failed_->why};
  if (blob.bytes.size() > settings_.max_entry_bytes) return Failure{too_large};
  RemoteStore* s = store();
  if (!s) return Failure{failed_ ? failed_->why : "no remote cache"};
  if (!s->writes()) return Failure{"the remote cache is read-only"};
  const std::string compressed = zstd_compress(blob.bytes);
  if (compressed.empty() && !blob.bytes.empty()) return Failure{"cannot compress it"};
  // Unsigned here: signed_store signs it on the way, with a signing key.
  const std::string bytes = encode_remote_entry(remote_key, blob.manifest, compressed);
  if (bytes.size() + kRemoteSignatureBytes > settings_.max_entry_bytes) return Failure{too_large};
  ServerResult<std::size_t> set = s->put(remote_key, bytes);
  // full (maxmemory without eviction), read-only replica...
  if (!set) return Failure{fail(set.faulted()).why};
  counts_.bytes_up += *set;  // as sent: a signing layer's signature included
  return ok();
}

bool RemoteCache::take_lease(const std::string& remote_key) {
  RemoteStore* s = store();
  if (!s || !s->leases()) return true;  // compile: no lease to take (read-only, HTTP)
  lease_token_ = random_token();
  ServerResult<bool> taken = s->take_lease(remote_key, lease_token_, settings_.lease);
  if (!taken) {
    fail(taken.faulted());
    return true;
  }
  if (!*taken) lease_token_.clear();
  return *taken;
}

void RemoteCache::release_lease(const std::string& remote_key) {
  if (lease_token_.empty()) return;
  if (RemoteStore* s = store()) (void)s->release_lease(remote_key, lease_token_);
  lease_token_.clear();
}

namespace {

// A duration as a person reads it: whole seconds, rounded up (ms below 1 s).
std::string seconds_text(std::chrono::milliseconds ms) {
  if (ms < std::chrono::seconds(1)) return std::to_string(ms.count()) + " ms";
  return std::to_string((ms.count() + 999) / 1000) + " s";
}

}  // namespace

void RemoteCache::say_wait(const std::string& remote_key,
                           std::chrono::steady_clock::duration waited, bool long_wait) const {
  if (!on_wait_) return;
  const std::string key = "remote key " + remote_key.substr(0, 12);
  const std::string most = seconds_text(settings_.lease);
  if (!long_wait) {
    on_wait_({"waiting for another builder's compile (" + key + ", up to " + most + ")", false});
    return;
  }
  const auto so_far = std::chrono::duration_cast<std::chrono::milliseconds>(waited);
  on_wait_({"still waiting for another builder's compile (" + key + "): " + seconds_text(so_far) +
                " so far, at most " + most +
                ", then this build compiles it itself; Ctrl-C stops it",
            true});
}

RemoteResult<std::string> RemoteCache::wait_for_entry(const std::string& remote_key,
                                                      const OutputCache& local,
                                                      const std::string& local_key,
                                                      const Environment& env, int dest) {
  const RemoteMiss ended{remote_key, RemoteAbsent{}};
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + settings_.lease;
  // Said when the wait begins, not when it ends: a user sees why nothing
  // happens (and a second line, without -v, when it goes on).
  say_wait(remote_key, {}, false);
  bool said_long = false;
  auto pause = std::chrono::milliseconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto waited = std::chrono::steady_clock::now() - start;
        !said_long && waited >= settings_.long_wait) {
      said_long = true;
      say_wait(remote_key, waited, true);
    }
    if (int sig = sleep_unless_interrupted(pause))
      throw Error(ErrorKind::interrupted, "interrupted by signal " + std::to_string(sig) +
                                              " while waiting for another builder's compile (it "
                                              "holds the lease on remote key " +
                                              remote_key.substr(0, 12) + ")");
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
    RemoteStore* s = store();
    if (!s) return failed_ ? RemoteMiss{remote_key, *failed_} : ended;
    ServerResult<bool> lease = s->lease_held(remote_key);
    if (!lease) return RemoteMiss{remote_key, fail(lease.faulted())};
    // RemoteEntry first: the holder uploads, then releases.
    ServerResult<bool> entry = s->exists(remote_key);
    if (entry && *entry) return fetch(remote_key, local, local_key, env, dest);
    if (!*lease) return ended;  // released or expired without an entry
  }
  return ended;
}

CounterIncrements RemoteCache::take_counters() {
  CounterIncrements counters{{"remote_hits", counts_.hits},
                             {"remote_misses", counts_.misses},
                             {"remote_errors", counts_.errors},
                             {"remote_bytes_down", counts_.bytes_down},
                             {"remote_bytes_up", counts_.bytes_up}};
  counts_ = {};
  return counters;
}

void RemoteCache::save_stats(const OutputCache& local) {
  if (local.root() && enabled()) add_counters(*local.root(), take_counters());
}

RemoteStats remote_stats(const TrustedDir& root) {
  RemoteStats st;
  Result<std::string> text = root.read("stats.json", 1 << 16);
  if (!text) return st;
  try {
    auto j = nlohmann::json::parse(*text);
    if (!j.is_object()) return st;
    st = {field(j, "remote_hits"), field(j, "remote_misses"), field(j, "remote_errors"),
          field(j, "remote_bytes_down"), field(j, "remote_bytes_up")};
  } catch (const nlohmann::json::exception&) {
  }
  return st;
}

}  // namespace kbuild
