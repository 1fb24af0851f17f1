
#include "run/output_cache.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "kbuild/error.hpp"
#include "run/cache_key.hpp"
#include "run/input_manifest.hpp"
#include "site/search.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

constexpr std::size_t kMaxManifest = 16u << 20;

// Copies `from` to `to` (both open), returning the bytes' size and BLAKE2b digest;
// `write_failed` (when given) says whether a failure was writing `to`.
Result<std::pair<std::uint64_t, std::string>> copy_hashing(int from, int to,
                                                           bool* write_failed = nullptr) {
  Digest sha;
  std::uint64_t size = 0;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(from, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failure{std::strerror(errno)};
    if (n == 0) break;
    sha.add(buffer, static_cast<std::size_t>(n));
    size += static_cast<std::uint64_t>(n);
    for (ssize_t done = 0; to >= 0 && done < n;) {  // straight from the buffer: no copy
      ssize_t w = ::write(to, buffer + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        if (write_failed) *write_failed = true;
        return Failure{std::string("cannot write the output: ") + std::strerror(errno)};
      }
      done += w;
    }
  }
  return std::make_pair(size, sha.hex());
}

std::string entry_parent(const std::string& key) {
  return "objects/" + key.substr(0, 2);
}

// All of `from` (open), from its start.
Result<std::string> read_all(int from) {
  std::string bytes;
  char buffer[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(from, buffer, sizeof buffer, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failure{std::strerror(errno)};
    if (n == 0) return bytes;
    bytes.append(buffer, static_cast<std::size_t>(n));
    at += n;
  }
}

// `from` (open, from its start) written to `to` as one zstd frame; the
// original bytes' size and digest. The whole output is in memory meanwhile
// (a store follows a compile, which took more).
Result<std::pair<std::uint64_t, std::string>> compress_hashing(int from, int to) {
  Result<std::string> bytes = read_all(from);
  if (!bytes) return Failure{bytes.why()};
  const std::string frame = zstd_compress(*bytes);
  if (frame.empty()) return Failure{"cannot compress the output"};
  if (Status s = write_all(to, frame, "output"); !s) return Failure{s.why()};
  return std::make_pair(static_cast<std::uint64_t>(bytes->size()), digest_hex(*bytes));
}

// A compressed entry's output (one zstd frame holding `size` bytes)
// decompressed into `dest` a MiB at a time; its size and digest.
// `write_failed` says whether a failure was writing `dest`.
Result<std::pair<std::uint64_t, std::string>> expand_hashing(int from, std::uint64_t size, int dest,
                                                             bool& write_failed) {
  // At most what zstd's worst case makes of `size` bytes.
  const std::uint64_t most = size + size / 128 + (1u << 16);
  struct stat st {};
  if (::fstat(from, &st) != 0 || static_cast<std::uint64_t>(st.st_size) > most)
    return Failure{"damaged"};
  Result<std::string> frame = read_all(from);
  if (!frame) return Failure{frame.why()};
  Digest digest;
  std::uint64_t written = 0;
  bool damaged = false;
  Status expanded = zstd_decompress_to(
      *frame, size,
      [&](std::string_view chunk) -> Status {
        digest.add(chunk.data(), chunk.size());
        written += chunk.size();
        Status s = write_all(dest, chunk, "output");
        write_failed = !s;
        return s;
      },
      damaged);
  if (!expanded) return Failure{expanded.why()};
  return std::make_pair(written, digest.hex());
}

}  // namespace

void CompilerOutput::add(const ProcessResult& run) {
  truncated = truncated || run.output_truncated;
  auto append = [this](int stream, std::string_view bytes) {
    if (bytes.empty()) return;
    if (!pieces.empty() && pieces.back().stream == stream)
      pieces.back().bytes.append(bytes);
    else
      pieces.push_back({stream, std::string(bytes)});
  };
  std::size_t out_at = 0, err_at = 0, spanned = 0;
  for (const OutputSpan& span : run.order) {
    std::size_t& at = span.stream == 1 ? out_at : err_at;
    const std::string& from = span.stream == 1 ? run.out : run.err;
    if (at + span.bytes > from.size()) break;  // not this run's spans: out, then err
    append(span.stream, std::string_view(from).substr(at, span.bytes));
    at += span.bytes;
    spanned += span.bytes;
  }
  if (spanned == run.out.size() + run.err.size()) return;
  // No (or no usable) order: what is left of out, then of err.
  append(1, std::string_view(run.out).substr(std::min(out_at, run.out.size())));
  append(2, std::string_view(run.err).substr(std::min(err_at, run.err.size())));
}

std::size_t CompilerOutput::size() const {
  std::size_t total = 0;
  for (const Piece& piece : pieces) total += piece.bytes.size();
  return total;
}

std::string encode_compiler_output(const CompilerOutput& output) {
  if (output.empty()) return "";
  std::string plain;
  for (const CompilerOutput::Piece& piece : output.pieces) {
    plain.push_back(static_cast<char>(piece.stream));
    const std::uint64_t n = piece.bytes.size();
    for (int i = 0; i < 8; ++i) plain.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    plain += piece.bytes;
  }
  return zstd_compress(plain);
}

Result<CompilerOutput> decode_compiler_output(std::string_view stored) {
  CompilerOutput output;
  if (stored.empty()) return output;
  // Each piece costs 9 bytes of framing besides its bytes.
  Result<std::string> plain = zstd_decompress(stored, kMaxCompilerOutput * 2);
  if (!plain) return Failure{"not a zstd frame of what the compiler printed (" + plain.why() + ")"};
  std::string_view rest(*plain);
  while (!rest.empty()) {
    const std::string piece = "piece " + std::to_string(output.pieces.size() + 1);
    if (rest.size() < 9) return Failure{piece + " is truncated"};
    if (rest[0] != 1 && rest[0] != 2)
      return Failure{piece + " names stream " + std::to_string(static_cast<int>(rest[0])) +
                     ", not 1 (stdout) or 2 (stderr)"};
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i)
      n |= static_cast<std::uint64_t>(static_cast<unsigned char>(rest[1 + i])) << (8 * i);
    if (n == 0) return Failure{piece + " is empty"};
    if (n > rest.size() - 9) return Failure{piece + " is truncated"};
    output.pieces.push_back({rest[0], std::string(rest.substr(9, n))});
    rest.remove_prefix(9 + n);
  }
  if (output.size() > kMaxCompilerOutput)
    return Failure{"more than " + human_size(kMaxCompilerOutput)};
  return output;
}

Result<std::string> with_replay(const std::string& manifest, const CompilerOutput& printed,
                                const std::optional<std::string>& depfile) {
  if (printed.truncated || printed.size() > kMaxCompilerOutput)
    return Failure{"the compiler printed more than " + human_size(kMaxCompilerOutput) +
                   ", which a hit would not replay whole"};
  if (depfile && depfile->size() > kMaxDepfile)
    return Failure{"its dependency file is larger than " + human_size(kMaxDepfile)};
  Result<Manifest> entry = read_manifest(manifest);
  if (!entry) return Failure{"no manifest of what the build read (" + entry.why() + ")"};
  const std::string stored = encode_compiler_output(printed);
  if (stored.empty() && !printed.empty()) return Failure{"cannot compress what it printed"};
  entry->diagnostics = entry->keep(stored);
  if (depfile) {
    const std::string frame = zstd_compress(*depfile);
    if (frame.empty()) return Failure{"cannot compress its dependency file"};
    entry->depfile = entry->keep(frame);
  }
  return manifest_bytes(*entry);
}

void replay_compiler_output(const CompilerOutput& output, int out_fd, int err_fd) {
  for (const CompilerOutput::Piece& piece : output.pieces)
    (void)write_all(piece.stream == 1 ? out_fd : err_fd, piece.bytes, "");
}

OpenedCache OutputCache::open(const CacheSettings& settings, bool create, const FileSystem& files) {
  OpenedCache opened;
  OutputCache& cache = opened.cache;
  cache.files_ = &files;
  cache.max_bytes_ = settings.max_bytes;
  cache.compress_ = settings.compress;
  if (!settings.enabled) return opened;
  if (settings.root.empty()) {
    opened.disabled = CacheDisabled{std::string(kNoCacheRoot) + "; building without the cache"};
    return opened;
  }
  if (!create && !files.status(settings.root)) return opened;
  Result<TrustedDir> root = open_cache_root(settings.root, create);
  if (!root) {
    opened.disabled = CacheDisabled{root.why() + "; building without the cache", true};
    return opened;
  }
  cache.root_.emplace(std::move(*root));
  return opened;
}

bool OutputCache::fetch(const std::string& key, const Environment& env, int dest,
                        std::string* manifest_out, std::optional<StaleInput>* stale) {
  if (!root_) return false;
  Result<TrustedDir> entry = root_->sub(entry_parent(key) + "/" + key, false);
  if (!entry) return false;
  Result<std::string> bytes = entry->read("manifest", kMaxManifest);
  if (!bytes) return false;
  Result<Manifest> manifest = read_manifest(*bytes);
  // An entry without the compiler's output is an older kbuild's: a miss,
  // never a hit that would lose the warnings.
  if (!manifest || !manifest->size || !manifest->digest || !manifest->diagnostics) {
    if (stale) *stale = StaleInput{};  // damaged
    return false;
  }
  if (std::optional<StaleInput> changed = manifest_stale(*manifest, env, *files_)) {
    if (stale) *stale = std::move(changed);
    return false;
  }
  Result<UniqueFd> output = entry->open_file("output");
  bool whole = false, write_failed = false;
  if (output) {
    auto copied = manifest->compressed
                      ? expand_hashing(output->get(), *manifest->size, dest, write_failed)
                      : copy_hashing(output->get(), dest, &write_failed);
    whole = copied && copied->first == *manifest->size && copied->second == *manifest->digest;
  }
  if (!whole) {
    // Truncated, emptied or replaced: never served, and removed. When only
    // writing `dest` failed (a full output disk), the entry is kept.
    if (!write_failed)
      if (Result<TrustedDir> parent = root_->sub(entry_parent(key), false))
        (void)parent->remove_tree(key);
    return false;
  }
  // Least recently used: a hit refreshes the entry.
  if (Result<TrustedDir> parent = root_->sub(entry_parent(key), false)) parent->touch(key);
  if (manifest_out) *manifest_out = std::move(*bytes);
  return true;
}

Status OutputCache::store(const CacheKey& key, int built, const KeyInput& input,
                          const BuildInputs& inputs) {
  if (!root_) return Failure{"no cache"};
  // A source edited while the compiler ran: the output may not match the key.
  for (std::size_t i = 0; i < input.sources.size() && i < key.source_digest.size(); ++i) {
    Result<std::string> bytes =
        files_->read(input.sources[i], std::numeric_limits<std::size_t>::max());
    if (!bytes || digest_hex(*bytes) != key.source_digest[i])
      return Failure{input.sources[i] + " changed during the build"};
  }
  if (::lseek(built, 0, SEEK_SET) != 0) return Failure{"cannot read the output"};

  Result<TrustedDir> tmp = root_->sub("tmp", true);
  if (!tmp) return Failure{tmp.why()};
  const std::string staging = unique_suffix();
  if (::mkdirat(tmp->fd(), staging.c_str(), 0700) != 0)
    return Failure{"cannot create a cache entry"};
  Result<TrustedDir> stage = tmp->sub(staging, false);
  Status done = stage ? ok() : Failure{stage.why()};
  if (done) {
    Result<UniqueFd> out = stage->create_file("output", 0644);
    auto copied = !out        ? Result<std::pair<std::uint64_t, std::string>>(Failure{out.why()})
                  : compress_ ? compress_hashing(built, out->get())
                              : copy_hashing(built, out->get());
    if (!copied) done = Failure{copied.why()};
    Result<Manifest> read = Failure{"no output"};
    std::string manifest;
    if (done) {
      read = read_manifest(inputs.manifest);
      if (!read) done = Failure{"no manifest of what the build read (" + read.why() + ")"};
    }
    if (done) {
      read->size = copied->first;
      read->digest = copied->second;
      read->compressed = compress_;
      manifest = manifest_bytes(*read);
    }
    if (done) {
      // Straight in: the staging directory is this store's alone, and the
      // entry appears whole when it is renamed into place (a temporary file
      // and a rename of its own were one more inode and rename per miss).
      Result<UniqueFd> file = stage->create_file("manifest", 0644);
      done = file ? write_all(file->get(), manifest, stage->path() + "/manifest")
                  : Status(Failure{file.why()});
    }
  }
  Result<TrustedDir> parent =
      done ? root_->sub(entry_parent(key.hex), true) : Result<TrustedDir>(Failure{done.why()});
  if (done && !parent) done = Failure{parent.why()};
  if (done) {
    // An older entry for this key (its headers changed) is replaced.
    if (parent->exists(key.hex)) {
      const std::string old = "old." + unique_suffix();
      if (parent->rename(key.hex, *tmp, old)) (void)tmp->remove_tree(old);
    }
    done = tmp->rename(staging, *parent, key.hex);  // atomic: the whole entry or nothing
  }
  (void)tmp->remove_tree(staging);
  return done;
}

bool cache_compression(const Environment& env) {
  return env.get_nonempty("KBUILD_CACHE_COMPRESS").value_or("0") != "0";
}

void OutputCache::count(bool hit) {
  if (root_) add_counters(*root_, {{hit ? "hits" : "misses", 1}});
}

namespace {

struct EntryInfo {
  std::string parent, key;
  std::int64_t used_ns = 0;
  std::uint64_t bytes = 0;
};

std::vector<EntryInfo> list_entries(const TrustedDir& root) {
  std::vector<EntryInfo> entries;
  Result<TrustedDir> objects = root.sub("objects", false);
  if (!objects) return entries;
  for (const std::string& prefix : objects->list()) {
    Result<TrustedDir> parent = objects->sub(prefix, false);
    if (!parent) continue;
    for (const std::string& key : parent->list()) {
      auto dir_st = parent->status(key);
      if (!dir_st || !S_ISDIR(dir_st->st_mode)) continue;
      Result<TrustedDir> entry = parent->sub(key, false);
      if (!entry) continue;
      auto out = entry->status("output");
      if (!out || !S_ISREG(out->st_mode)) continue;
      entries.push_back({"objects/" + prefix, key, ns(dir_st->st_mtim),
                         static_cast<std::uint64_t>(out->st_size)});
    }
  }
  return entries;
}

}  // namespace

CacheStats OutputCache::stats() const {
  CacheStats st;
  if (!root_) return st;
  for (const EntryInfo& e : list_entries(*root_)) {
    ++st.entries;
    st.bytes += e.bytes;
  }
  if (Result<std::string> text = root_->read("stats.json", 1 << 16)) {
    try {
      auto j = parse_json_text(*text);
      if (j.is_object()) {
        if (j.contains("hits") && j["hits"].is_number_unsigned())
          st.hits = j["hits"].get<std::uint64_t>();
        if (j.contains("misses") && j["misses"].is_number_unsigned())
          st.misses = j["misses"].get<std::uint64_t>();
        constexpr std::string_view kReason = "uncacheable_";
        for (const auto& [field, value] : j.items()) {
          if (!value.is_number_unsigned()) continue;
          if (field == "uncacheable") st.uncacheable = value.get<std::uint64_t>();
          if (field.size() > kReason.size() && field.compare(0, kReason.size(), kReason) == 0)
            st.uncacheable_by_reason.emplace_back(field.substr(kReason.size()),
                                                  value.get<std::uint64_t>());
        }
      }
    } catch (const JsonSyntaxError&) {  // damaged: no counts
    }
  }
  return st;
}

void OutputCache::evict() {
  if (!root_) return;
  std::vector<EntryInfo> items = list_entries(*root_);
  std::uint64_t total = 0;
  for (const EntryInfo& e : items) total += e.bytes;
  if (total <= max_bytes_) return;
  std::sort(items.begin(), items.end(),
            [](const EntryInfo& a, const EntryInfo& b) { return a.used_ns < b.used_ns; });
  // Down to 90% of the limit, so eviction does not run on every store.
  for (const EntryInfo& item : items) {
    if (total <= max_bytes_ / 10 * 9) break;
    Result<TrustedDir> parent = root_->sub(item.parent, false);
    if (parent) (void)parent->remove_tree(item.key);
    total -= item.bytes;
  }
}

}  // namespace kbuild

namespace kbuild {

namespace {

constexpr const char* kStats = "stats.json";

nlohmann::json read_counters(const TrustedDir& root) {
  Result<std::string> text = root.read(kStats, 1 << 16);
  if (!text) return nlohmann::json::object();
  try {
    nlohmann::json stats = parse_json_text(*text);
    return stats.is_object() ? stats : nlohmann::json::object();
  } catch (const JsonSyntaxError&) {  // damaged: counting starts again
  } catch (const nlohmann::json::exception&) {
  }
  return nlohmann::json::object();
}

// Puts `tmp` in place of stats.json. A plain rename over an existing file
// makes ext4 (auto_da_alloc) start writing the new file out first, about 2
// ms per rename on the development VM, so the two are exchanged instead and
// the old one removed: a reader still sees the old file or the new one,
// whole. The counters need no such care after a crash (a damaged or empty
// stats.json counts from 0 again). Anything but a regular file there, or a
// file system without exchange: the plain rename.
Status replace_stats(const TrustedDir& root, const std::string& tmp) {
  std::optional<struct stat> old = root.status(kStats);
  if (old && S_ISREG(old->st_mode) &&
      ::renameat2(root.fd(), tmp.c_str(), root.fd(), kStats, RENAME_EXCHANGE) == 0)
    return root.remove_file(tmp);
  return root.rename(tmp, kStats);
}

Status write_counters(const TrustedDir& root, const nlohmann::json& stats) {
  const std::string tmp = std::string(".") + kStats + ".tmp." + unique_suffix();
  Result<UniqueFd> fd = root.create_file(tmp, 0644);
  if (!fd) return Failure{fd.why()};
  Status written = write_all(fd->get(), stats.dump(), root.path() + "/" + tmp);
  fd->reset();
  if (written) written = replace_stats(root, tmp);
  if (!written) (void)root.remove_file(tmp);
  return written;
}

// Set once stats.lock stayed held for a whole wait: later updates in this
// process try it once, without waiting again.
std::atomic<bool> stats_lock_stuck{false};

// stats.lock, waited for at most half a second (an update holds it for a
// millisecond or so): a holder stopped with Ctrl-Z must not stall every
// later build, and the counts are optional. Nothing when it stays held.
// An interrupt ends the wait: Error(interrupted).
std::optional<DirLock> lock_stats(const TrustedDir& root) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    DirLock lock(root, "stats.lock", false);
    const bool held_by_another = !lock.held() && errno == EWOULDBLOCK;
    if (lock.held()) stats_lock_stuck = false;
    if (!held_by_another)
      return lock.held() ? std::optional<DirLock>(std::move(lock)) : std::nullopt;
    if (stats_lock_stuck || std::chrono::steady_clock::now() >= deadline) {
      stats_lock_stuck = true;
      return std::nullopt;
    }
    if (int sig = sleep_unless_interrupted(pause))
      throw Error(ErrorKind::interrupted, "interrupted by signal " + std::to_string(sig) +
                                              " while waiting for " + root.path() +
                                              "/stats.lock (the cache's counters)");
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

void add_counters(const TrustedDir& root, const CounterIncrements& increments) {
  if (std::all_of(increments.begin(), increments.end(),
                  [](const auto& i) { return i.second == 0; }))
    return;
  std::optional<DirLock> lock = lock_stats(root);
  if (!lock) return;
  nlohmann::json stats = read_counters(root);
  for (const auto& [field, n] : increments) {
    if (n == 0) continue;
    const std::uint64_t before = stats.contains(field) && stats[field].is_number_unsigned()
                                     ? stats[field].get<std::uint64_t>()
                                     : 0;
    stats[field] = before + n;
  }
  (void)write_counters(root, stats);
}

}  // namespace kbuild

// The staging and install of an entry that another layer brings (a remote
// hit): the same layout as store()'s, tmp/ then objects/XX/KEY.
namespace kbuild {

Result<StagedEntry> OutputCache::stage_entry() const {
  if (!root_) return Failure{"no cache"};
  Result<TrustedDir> tmp = root_->sub("tmp", true);
  if (!tmp) return Failure{tmp.why()};
  StagedEntry staged{"remote." + unique_suffix(), {}};
  if (::mkdirat(tmp->fd(), staged.name.c_str(), 0700) != 0) return Failure{"cannot stage an entry"};
  Result<TrustedDir> stage = tmp->sub(staged.name, false);
  Result<UniqueFd> out = stage ? stage->create_file("output", 0644) : Failure{stage.why()};
  if (!out) {
    (void)tmp->remove_tree(staged.name);
    return Failure{out.why()};
  }
  staged.output = std::move(*out);
  return staged;
}

void OutputCache::discard_entry(StagedEntry& staged) const {
  staged.output.reset();
  if (!root_) return;
  if (Result<TrustedDir> tmp = root_->sub("tmp", false)) (void)tmp->remove_tree(staged.name);
}

Status OutputCache::install_entry(const std::string& key, StagedEntry& staged,
                                  std::string_view manifest) const {
  staged.output.reset();
  if (!root_) return Failure{"no cache"};
  Result<TrustedDir> tmp = root_->sub("tmp", false);
  if (!tmp) return Failure{tmp.why()};
  Result<TrustedDir> stage = tmp->sub(staged.name, false);
  Status done = stage ? stage->write_atomically("manifest", std::string(manifest))
                      : Status(Failure{stage.why()});
  Result<TrustedDir> parent = done ? root_->sub(entry_parent(key), true) : Failure{done.why()};
  if (done && !parent) done = Failure{parent.why()};
  if (done) {
    if (parent->exists(key)) {
      const std::string old = "old." + unique_suffix();
      if (parent->rename(key, *tmp, old)) (void)tmp->remove_tree(old);
    }
    done = tmp->rename(staged.name, *parent, key);
  }
  (void)tmp->remove_tree(staged.name);
  return done;
}

Result<StoredEntry> OutputCache::read_entry(const std::string& key, std::size_t max_output) const {
  if (!root_) return Failure{"no cache"};
  Result<TrustedDir> dir = root_->sub(entry_parent(key) + "/" + key, false);
  if (!dir) return Failure{dir.why()};
  Result<std::string> manifest = dir->read("manifest", 16u << 20);
  if (!manifest) return Failure{manifest.why()};
  Result<std::string> output = dir->read("output", max_output);
  if (!output) return Failure{output.why()};
  return StoredEntry{std::move(*manifest), std::move(*output)};
}

}  // namespace kbuild
