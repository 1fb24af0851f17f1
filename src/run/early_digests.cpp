#include "run/early_digests.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include "util/digest.hpp"
#include "util/file_system.hpp"

namespace kbuild {

namespace {

// Records the observer writes: KIND PID ' ' PAYLOAD, each ended by a NUL
// (observation.cpp reads them whole; this takes only what names a file
// read, run or written).
bool record_of(std::string_view text, char& kind, std::string_view& payload) {
  if (text.size() < 3) return false;
  kind = text[0];
  std::size_t at = 1;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
  if (at == 1 || at >= text.size() || text[at] != ' ') return false;
  payload = text.substr(at + 1);
  return true;
}

bool is_system(std::string_view path) {
  auto under = [path](std::string_view dir) {
    return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
           path[dir.size()] == '/';
  };
  return under("/proc") || under("/dev") || under("/sys");
}

// Looks for the clock's macros in text read a piece at a time (a mention
// may straddle two pieces); a NUL in the first 8 KiB makes it a binary.
class ClockScan {
 public:
  void operator()(std::string_view piece) {
    if (binary_ || found_) return;
    if (seen_ < 8192) {
      const std::size_t head = std::min<std::size_t>(piece.size(), 8192 - seen_);
      if (std::memchr(piece.data(), '\0', head)) {
        binary_ = true;
        return;
      }
    }
    seen_ += piece.size();
    // The last 7 bytes before this piece, and its first 7: where a mention
    // of 8 bytes could straddle the two.
    std::string edge = carry_;
    edge.append(piece.substr(0, std::min<std::size_t>(piece.size(), 7)));
    found_ = mentioned(edge) || mentioned(piece);
    carry_ = piece.size() >= 7 ? std::string(piece.substr(piece.size() - 7))
                               : edge.substr(edge.size() - std::min<std::size_t>(edge.size(), 7));
  }
  [[nodiscard]] bool mentions() const { return found_ && !binary_; }
  [[nodiscard]] bool done() const { return found_ || binary_; }  // the rest cannot change it

 private:
  static bool mentioned(std::string_view bytes) {
    auto has = [bytes](std::string_view needle) {
      return ::memmem(bytes.data(), bytes.size(), needle.data(), needle.size()) != nullptr;
    };
    return has("__DATE__") || has("__TIME");
  }
  std::size_t seen_ = 0;
  bool binary_ = false, found_ = false;
  std::string carry_;
};

// Feeds `scan` the bytes of `path` while they are the version `seen`
// (same_identity before and after); false if they could not be read so, or
// `stop` ended the read (checked a MiB at a time, as a hash is).
bool scan_unread(const FileSystem& files, const std::string& path, const struct stat& seen,
                 ClockScan& scan, const std::atomic<bool>& stop) {
  Result<std::unique_ptr<OpenFile>> file = files.open(path);
  if (!file) return false;
  const std::optional<struct stat> before = (*file)->status();
  bool whole = before && same_identity(*before, seen);
  std::string piece(std::size_t{1} << 20, '\0');
  for (std::uint64_t at = 0; whole && !scan.done();) {
    if (stop.load(std::memory_order_relaxed)) {
      whole = false;
      break;
    }
    Result<std::size_t> n = (*file)->read_at(piece.data(), piece.size(), at);
    if (!n) whole = false;
    if (!n || *n == 0) break;
    scan(std::string_view(piece.data(), *n));
    at += *n;
  }
  const std::optional<struct stat> after = whole ? (*file)->status() : std::nullopt;
  return whole && after && same_identity(*after, seen);
}

}  // namespace

EarlyDigests::EarlyDigests(const FileSystem& files, const TrustedDir* cache,
                           std::size_t remember_from)
    : files_(files), cache_(cache), remember_from_(remember_from) {}

EarlyDigests::~EarlyDigests() {
  finish();
}

// A compiler is started by fork and exec. Between them the child runs
// Boost.Process's fork handlers, which allocate: under AddressSanitizer
// (GCC 12), whose allocator fork does not make safe, a child forked while
// this thread held an allocator lock spun for ever. So every fork waits
// until the running threads are parked at a safe point (between records,
// between a file's MiB pieces), and releases them in the parent.
namespace {
std::mutex fork_registry_mutex;
std::vector<EarlyDigests*>& fork_registry() {
  static std::vector<EarlyDigests*> running;
  return running;
}
}  // namespace

void early_digests_fork_prepare() {
  fork_registry_mutex.lock();  // until the fork is made: unlocked in parent and child
  for (EarlyDigests* e : fork_registry()) {
    e->hold_ = true;
    if (e->wake_ >= 0) (void)::eventfd_write(e->wake_, 1);
    std::unique_lock<std::mutex> lock(e->park_mutex_);
    e->park_cv_.wait(lock, [e] { return e->parked_ || e->done_; });
  }
}

void early_digests_fork_parent() {
  for (EarlyDigests* e : fork_registry()) {
    {
      std::lock_guard<std::mutex> lock(e->park_mutex_);
      e->hold_ = false;
    }
    e->park_cv_.notify_all();
  }
  fork_registry_mutex.unlock();
}

namespace {
void early_digests_fork_child() {
  fork_registry_mutex.unlock();  // the threads are not in the child
}
}  // namespace

void EarlyDigests::park_if_held() {
  if (!hold_.load(std::memory_order_acquire)) return;
  std::unique_lock<std::mutex> lock(park_mutex_);
  parked_ = true;
  park_cv_.notify_all();
  park_cv_.wait(lock, [this] { return !hold_.load(); });
  parked_ = false;
}

void EarlyDigests::start() {
  if (thread_.joinable() || stop_) return;
  static std::once_flag handlers;
  std::call_once(handlers, [] {
    ::pthread_atfork(early_digests_fork_prepare, early_digests_fork_parent,
                     early_digests_fork_child);
  });
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_ < 0) return;  // nothing could end its wait: no thread
  // Signals stay with the thread that runs the compiler (its Ctrl-C).
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  {
    std::lock_guard<std::mutex> registry(fork_registry_mutex);
    try {
      thread_ = std::thread([this] {
        work();
        std::lock_guard<std::mutex> lock(park_mutex_);
        done_ = true;
        park_cv_.notify_all();
      });
      fork_registry().push_back(this);
    } catch (const std::system_error&) {  // no thread: the manifest hashes as before
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void EarlyDigests::watch(const std::string& record_dir) {
  start();
  std::lock_guard<std::mutex> lock(mutex_);
  dirs_.push_back(record_dir);
  if (wake_ >= 0) (void)::eventfd_write(wake_, 1);
}

void EarlyDigests::foresee(const std::vector<std::string>& paths) {
  start();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& path : paths)
    if (queued_.insert(path).second) foreseen_.push_back(path);
  if (wake_ >= 0) (void)::eventfd_write(wake_, 1);
}

void EarlyDigests::finish(bool complete) {
  (complete ? complete_ : stop_) = true;
  if (wake_ >= 0) (void)::eventfd_write(wake_, 1);
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> registry(fork_registry_mutex);
    auto& running = fork_registry();
    running.erase(std::remove(running.begin(), running.end(), this), running.end());
  }
  if (wake_ >= 0) ::close(wake_);
  wake_ = -1;
  for (auto& [file, tail] : tails_)
    if (tail.fd >= 0) ::close(std::exchange(tail.fd, -1));
}

const EarlyDigests::Look* EarlyDigests::find(const std::string& path,
                                             const struct stat& now) const {
  if (thread_.joinable()) return nullptr;  // still running: not before finish()
  auto it = looks_.find(path);
  return it != looks_.end() && same_identity(it->second.seen, now) ? &it->second : nullptr;
}

bool EarlyDigests::saw_other(const std::string& path, const struct stat& now) const {
  if (thread_.joinable()) return false;
  auto it = looks_.find(path);
  return it != looks_.end() && !same_identity(it->second.seen, now);
}

// Takes the records written since the last look: files read (or run) that
// no one wrote first, queued in the order they were read.
bool EarlyDigests::drain() {
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs = dirs_;
  }
  bool more = false;
  for (const std::string& dir : dirs) {
    std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
    if (!listing) continue;
    while (const dirent* entry = ::readdir(listing.get())) {
      if (entry->d_name[0] == '.') continue;
      const std::string file = dir + "/" + entry->d_name;
      // Each record file stays open: a look is then one pread a file.
      Tail& tail = tails_[file];
      if (tail.fd < 0) tail.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (tail.fd < 0) continue;
      std::string bytes;
      std::array<char, 1 << 16> buffer{};
      for (;;) {
        const ssize_t n = ::pread(tail.fd, buffer.data(), buffer.size(),
                                  static_cast<off_t>(tail.taken + bytes.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes.append(buffer.data(), static_cast<std::size_t>(n));
      }
      std::string_view rest(bytes);
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t end; (end = rest.find('\0')) != std::string_view::npos;) {
        char kind = 0;
        std::string_view path;
        if (record_of(rest.substr(0, end), kind, path) && !is_system(path)) {
          if (kind == 'W') written_.emplace(path);
          if ((kind == 'R' || kind == 'P') && !written_.count(std::string(path)) &&
              queued_.emplace(path).second) {
            observed_.emplace_back(path);
            more = true;
          }
        }
        tail.taken += end + 1;
        rest.remove_prefix(end + 1);
      }
    }
  }
  return more;
}

bool EarlyDigests::next(std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::deque<std::string>* queue : {&observed_, &foreseen_})
    if (!queue->empty()) {
      path = std::move(queue->front());
      queue->pop_front();
      return true;
    }
  return false;
}

void EarlyDigests::hash(const std::string& path) {
  ClockScan scan;
  FileLookRequest how;
  how.visit = [this, &scan](std::string_view piece) {
    scan(piece);
    park_if_held();  // between pieces: no allocator lock held
  };
  how.stop = &stop_;
  Result<FileLook> look = look_at_file(files_, path, cache_, remember_from_, how);
  if (!look) return;  // unreadable, changed while read, or stopped: the manifest decides
  // A remembered digest came unread: the scan reads it now (a binary ends
  // at its first 8 KiB), here rather than after the compile.
  bool scanned = look->read;
  if (!scanned) scanned = scan_unread(files_, path, look->seen, scan, stop_);
  Look known;
  known.seen = look->seen;
  known.digest = std::move(look->digest);
  known.scanned = scanned;
  known.mentions_clock = scanned && scan.mentions();
  std::lock_guard<std::mutex> lock(mutex_);
  looks_.insert_or_assign(path, std::move(known));
}

void EarlyDigests::work() {
  // The records are looked at between files while there is work, and
  // while there is none every 2 ms, backing off to 32 ms while nothing new
  // comes (most records come in the compile's first part; then it
  // optimises for seconds). inotify would wake the thread at once, but
  // closing its descriptor costs about 10 ms (the kernel waits out a grace
  // period), which a small kernel's miss would pay after its compile.
  constexpr auto kFirst = std::chrono::milliseconds(2), kLongest = std::chrono::milliseconds(32);
  auto every = kFirst;
  auto looked = std::chrono::steady_clock::time_point{};
  while (!stop_) {
    park_if_held();
    const bool ending = complete_;  // read before the queues: records after it are left
    if (ending || std::chrono::steady_clock::now() - looked >= every) {
      every = drain() ? kFirst : std::min(every * 2, kLongest);
      looked = std::chrono::steady_clock::now();
    }
    std::string path;
    if (next(path)) {
      hash(path);
      continue;
    }
    if (ending) return;
    pollfd wake{wake_, POLLIN, 0};
    if (::poll(&wake, 1, static_cast<int>(every.count())) < 0 && errno != EINTR) return;
    eventfd_t woken = 0;
    if (::eventfd_read(wake_, &woken) == 0) every = kFirst;  // a new step, or more to do
    looked = {};
  }
}

}  // namespace kbuild
