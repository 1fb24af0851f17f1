// early_digests: the files a compile reads, hashed while it still runs (the observer's records read
// as they are written, and the libraries its link names, foreseen), so that a miss's manifest
// after the compile only checks them.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "util/file_system.hpp"
#include "util/trusted_dir.hpp"

// A cold miss of an Inductor kernel read 550 MB of torch's libraries and
// hundreds of headers; hashing them after the compile added a third to its
// time. Hashed on a thread of their own while the compiler works, they cost
// the miss nothing a spare core cannot absorb. Nothing here decides what the
// manifest holds: the observed records do, and a digest is used only for
// the very version of the file the manifest records (same_identity). What
// it saw can only refuse a build: a path that was another file then than
// after the compile changed during it (saw_other).
namespace kbuild {

class EarlyDigests {
 public:
  // What was learnt of one file: its identity when read, its digest, and
  // whether its bytes were scanned for the clock's macros and named one.
  struct Look {
    struct stat seen {};
    std::string digest;
    bool scanned = false;         // its bytes went by (not a remembered digest)
    bool mentions_clock = false;  // "__DATE__" or "__TIME" in text (never in a binary)
  };

  // `cache`: where digests of files of `remember_from` bytes or more are
  // remembered (none: nothing is).
  // Files are stated and read in `files`.
  EarlyDigests(const FileSystem& files, const TrustedDir* cache, std::size_t remember_from);
  ~EarlyDigests();
  EarlyDigests(const EarlyDigests&) = delete;
  EarlyDigests& operator=(const EarlyDigests&) = delete;

  // Reads the records the observer writes into `record_dir` (a step's),
  // as they come: each file read, hashed.
  void watch(const std::string& record_dir);
  // Files the build will probably read (a link's libraries), hashed when no
  // observed one waits. A wrong guess costs only the thread's time.
  void foresee(const std::vector<std::string>& paths);
  // Ends the thread: at once (a file half read is left to the manifest),
  // or with `complete` once every record written so far and every file
  // queued is hashed (what a test waits for).
  void finish(bool complete = false);

  // What was learnt of `path` (spelled as recorded), if `now` (its stat)
  // is still the version that was read; null otherwise. After finish().
  [[nodiscard]] const Look* find(const std::string& path, const struct stat& now) const;
  // Whether `path` was looked at while the build ran and was then another
  // version than `now` (another file, or since changed): it changed during
  // the build, whatever its times say (a link to a directory swapped for
  // one to an older tree). After finish().
  [[nodiscard]] bool saw_other(const std::string& path, const struct stat& now) const;

 private:
  void start();
  void work();
  bool drain();  // true when it queued a file
  bool next(std::string& path);
  void hash(const std::string& path);
  // Waits here while a fork is being made (see fork_prepare in the .cpp).
  void park_if_held();
  friend void early_digests_fork_prepare();
  friend void early_digests_fork_parent();

  const FileSystem& files_;
  const TrustedDir* cache_;
  std::size_t remember_from_;
  std::mutex mutex_;
  std::vector<std::string> dirs_;  // watched: each step's records
  struct Tail {
    int fd = -1;            // the record file, open while the build runs
    std::size_t taken = 0;  // bytes of it read
  };
  std::unordered_map<std::string, Tail> tails_;  // by record file
  std::deque<std::string> observed_, foreseen_;
  std::unordered_set<std::string> queued_, written_;
  std::unordered_map<std::string, Look> looks_;
  int wake_ = -1;  // an eventfd: finish() wakes the thread
  std::atomic<bool> stop_{false};
  std::atomic<bool> complete_{false};
  // Set by a fork in another thread: the thread waits at its next safe
  // point (parked) until the fork is made.
  std::atomic<bool> hold_{false};
  std::mutex park_mutex_;
  std::condition_variable park_cv_;
  bool parked_ = false, done_ = false;  // under park_mutex_
  std::thread thread_;
};

}  // namespace kbuild
