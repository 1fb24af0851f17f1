// kbuild's observer: a library preloaded into the compiler that kbuild runs
// (LD_PRELOAD), and so into every program the compiler runs (cc1plus, as,
// collect2, ld, lto-wrapper, a launcher's compiler). It records what they
// read, looked for and did not find, executed, listed, wrote, and asked the
// environment, so that a cache entry's manifest is what was observed, not
// what a model of the compiler guesses (docs/cache.md, "Observed inputs").
//
// C with a C ABI, depending on nothing but libc: it runs inside every
// program of the toolchain, before their own code.
//
// Records go to files in $KBUILD_OBSERVE_DIR, one per program image
// (created on its first record; a forked child appends to its parent's), one
// write(2) per record on an O_APPEND descriptor: records never interleave,
// and none is lost when a process dies. A record is
//   KIND PID ' ' PAYLOAD '\0'
// (a path or a variable cannot hold a NUL, so nothing needs escaping):
//   P exe        this program image started (its loaded libraries follow as R)
//   R path       opened for reading (also dlopen, and each loaded library)
//   A path       looked for and not found (ENOENT, ENOTDIR)
//   W path       opened for writing, created or renamed to
//   Y path       opened only to append to (a wrapper's log)
//   X path       about to execute (execve and friends; posix_spawn: after)
//   F path       that execution failed
//   L path       listed (opendir, scandir)
//   E NAME=VAL   a variable read that is set
//   N NAME       a variable read that is not set
// (The clock is not recorded: cc1plus reads it on every run, for its random
// seed; __DATE__ and __TIME__ are found by kbuild's scan of what was read.)
// Relative paths are kept relative while the process is in the directory it
// started in (so a reader in another checkout checks its own files), else
// made absolute; a path relative to a directory descriptor is joined to it.
// Both the plain and the 64-bit names are defined here: no redirection.
#undef _FILE_OFFSET_BITS
#undef _TIME_BITS
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

// ---- state ---------------------------------------------------------------

static char g_dir[PATH_MAX];  // $KBUILD_OBSERVE_DIR ("" : observe nothing)
static size_t g_dir_len;
static char g_start_cwd[PATH_MAX];  // where this image started
static int g_moved;                 // chdir'd since: relative paths made absolute
static int g_fd = -1;               // this image's record file
static pid_t g_fd_pid;              // the process that opened it (a fork keeps it)
static atomic_flag g_lock = ATOMIC_FLAG_INIT;

// Records already written by this image (kind and path hashed): a header
// opened a thousand times is recorded once. Open addressing, never grows;
// when full, records are simply written again (kbuild deduplicates).
#define SEEN_SLOTS 32768u
static uint64_t g_seen[SEEN_SLOTS];
static unsigned g_seen_count;

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) {
  }
}
static void unlock(void) {
  atomic_flag_clear_explicit(&g_lock, memory_order_release);
}

static uint64_t hash_record(char kind, const char* text, size_t len) {
  uint64_t h = 1469598103934665603ull ^ (unsigned char)kind;
  for (size_t i = 0; i < len; ++i) h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
  return h ? h : 1;
}

// Whether this record was written before; marks it written.
static int seen(char kind, const char* text, size_t len) {
  const uint64_t h = hash_record(kind, text, len);
  unsigned slot = (unsigned)(h % SEEN_SLOTS);
  for (unsigned probes = 0; probes < 64; ++probes, slot = (slot + 1) % SEEN_SLOTS) {
    if (g_seen[slot] == h) return 1;
    if (g_seen[slot] == 0) {
      if (g_seen_count * 4 > SEEN_SLOTS * 3) return 0;  // nearly full: keep writing
      g_seen[slot] = h;
      ++g_seen_count;
      return 0;
    }
  }
  return 0;
}

// Raw system calls for the observer's own files: never observed themselves.
static int raw_open(const char* path, int flags, mode_t mode) {
  return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static size_t decimal(char* out, unsigned long value) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  return n;
}

// The record file of this image, opened on first use (under the lock).
static int record_fd(void) {
  if (g_fd >= 0) return g_fd;
  char path[PATH_MAX + 64];
  memcpy(path, g_dir, g_dir_len);
  size_t at = g_dir_len;
  path[at++] = '/';
  at += decimal(path + at, (unsigned long)getpid());
  static unsigned long serial;  // a forked child that execs picks another name
  for (int attempt = 0; attempt < 100; ++attempt) {
    size_t end = at;
    path[end++] = '.';
    end += decimal(path + end, (unsigned long)(uintptr_t)&path + serial++);
    path[end] = '\0';
    int fd = raw_open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      g_fd = fd;
      g_fd_pid = getpid();
      return fd;
    }
    if (errno != EEXIST) break;
  }
  return -1;
}

static void put(char kind, const char* text, size_t len, int dedup) {
  if (!g_dir_len) return;
  int saved_errno = errno;
  lock();
  if (!dedup || !seen(kind, text, len)) {
    int fd = record_fd();
    char buf[PATH_MAX * 2 + 64];
    size_t at = 0;
    buf[at++] = kind;
    at += decimal(buf + at, (unsigned long)getpid());
    buf[at++] = ' ';
    if (len > sizeof buf - at - 1) len = sizeof buf - at - 1;
    memcpy(buf + at, text, len);
    at += len;
    buf[at++] = '\0';
    if (fd >= 0) {
      ssize_t done = write(fd, buf, at);
      (void)done;
    }
  }
  unlock();
  errno = saved_errno;
}

// ---- paths ---------------------------------------------------------------

static int inside_record_dir(const char* path) {
  return g_dir_len && strncmp(path, g_dir, g_dir_len) == 0 &&
         (path[g_dir_len] == '/' || path[g_dir_len] == '\0');
}

// `path` as recorded: relative to the starting directory while still in it,
// else absolute; relative to `dirfd` when that is not AT_FDCWD.
static void record_path(char kind, int dirfd, const char* path) {
  if (!g_dir_len || !path || !*path) return;
  char joined[PATH_MAX * 2];
  const char* text = path;
  if (path[0] != '/') {
    char base[PATH_MAX];
    ssize_t n = -1;
    if (dirfd != AT_FDCWD) {
      char link[64] = "/proc/self/fd/";
      size_t at = strlen(link);
      at += decimal(link + at, (unsigned long)dirfd);
      link[at] = '\0';
      n = syscall(SYS_readlinkat, AT_FDCWD, link, base, sizeof base - 1);
    } else if (g_moved) {
      n = getcwd(base, sizeof base) ? (ssize_t)strlen(base) : -1;
    }
    if (n > 0) {
      base[n] = '\0';
      size_t blen = (size_t)n, plen = strlen(path);
      if (blen + 1 + plen >= sizeof joined) return;
      memcpy(joined, base, blen);
      joined[blen] = '/';
      memcpy(joined + blen + 1, path, plen + 1);
      text = joined;
    } else if (dirfd != AT_FDCWD || g_moved) {
      return;  // cannot say where it is
    }
  }
  if (inside_record_dir(text)) return;
  put(kind, text, strlen(text), 1);
}

static int absent_errno(int err) {
  return err == ENOENT || err == ENOTDIR;
}

// After a lookup: R or W when it succeeded, A when nothing was there.
static void after_open(int result, int dirfd, const char* path, int flags) {
  if (result >= 0) {
    int access_mode = flags & O_ACCMODE;
    if ((flags & O_APPEND) && !(flags & O_TRUNC))
      record_path('Y', dirfd, path);
    else if (access_mode != O_RDONLY || (flags & (O_CREAT | O_TRUNC)))
      record_path('W', dirfd, path);
    else
      record_path((flags & O_DIRECTORY) ? 'L' : 'R', dirfd, path);
  } else if (absent_errno(errno)) {
    record_path('A', dirfd, path);
  }
}

static void after_lookup(int result, int dirfd, const char* path) {
  if (result != 0 && absent_errno(errno)) record_path('A', dirfd, path);
}

// ---- the real functions ----------------------------------------------------

#define REAL(name) real_##name
#define DECLARE_REAL(ret, name, ...)                                              \
  static ret (*real_##name)(__VA_ARGS__);                                         \
  static ret (*get_##name(void))(__VA_ARGS__) {                                   \
    if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name); \
    return real_##name;                                                           \
  }

// ---- start ---------------------------------------------------------------

static int record_library(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  const char* name = info->dlpi_name;
  if (name && name[0] == '/' && !strstr(name, "kbuild-observer")) record_path('R', AT_FDCWD, name);
  return 0;
}

static char* (*real_getenv_fn)(const char*);

__attribute__((constructor)) static void observer_start(void) {
  real_getenv_fn = (char* (*)(const char*))dlsym(RTLD_NEXT, "getenv");
  const char* dir = real_getenv_fn ? real_getenv_fn("KBUILD_OBSERVE_DIR") : NULL;
  if (!dir || dir[0] != '/' || strlen(dir) >= sizeof g_dir) return;
  g_dir_len = strlen(dir);
  memcpy(g_dir, dir, g_dir_len + 1);
  if (!getcwd(g_start_cwd, sizeof g_start_cwd)) g_moved = 1;
  const char* start = real_getenv_fn("KBUILD_OBSERVE_CWD");
  if (start && strcmp(start, g_start_cwd) != 0) g_moved = 1;
  char exe[PATH_MAX];
  ssize_t n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) n = 0;
  exe[n] = '\0';
  put('P', exe, (size_t)n, 0);
  dl_iterate_phdr(record_library, NULL);
}

// ---- opening files ---------------------------------------------------------

static int wants_mode(int flags) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define OPEN_LIKE(name)                               \
  DECLARE_REAL(int, name, const char*, int, ...)      \
  EXPORT int name(const char* path, int flags, ...) { \
    mode_t mode = 0;                                  \
    if (wants_mode(flags)) {                          \
      va_list ap;                                     \
      va_start(ap, flags);                            \
      mode = (mode_t)va_arg(ap, int);                 \
      va_end(ap);                                     \
    }                                                 \
    int fd = get_##name()(path, flags, mode);         \
    after_open(fd, AT_FDCWD, path, flags);            \
    return fd;                                        \
  }
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(name)                                        \
  DECLARE_REAL(int, name, int, const char*, int, ...)            \
  EXPORT int name(int dirfd, const char* path, int flags, ...) { \
    mode_t mode = 0;                                             \
    if (wants_mode(flags)) {                                     \
      va_list ap;                                                \
      va_start(ap, flags);                                       \
      mode = (mode_t)va_arg(ap, int);                            \
      va_end(ap);                                                \
    }                                                            \
    int fd = get_##name()(dirfd, path, flags, mode);             \
    after_open(fd, dirfd, path, flags);                          \
    return fd;                                                   \
  }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

// The fortified variants (_FORTIFY_SOURCE): no mode argument.
#define OPEN2_LIKE(name)                         \
  DECLARE_REAL(int, name, const char*, int)      \
  EXPORT int name(const char* path, int flags) { \
    int fd = get_##name()(path, flags);          \
    after_open(fd, AT_FDCWD, path, flags);       \
    return fd;                                   \
  }
OPEN2_LIKE(__open_2)
OPEN2_LIKE(__open64_2)

#define OPENAT2_LIKE(name)                                  \
  DECLARE_REAL(int, name, int, const char*, int)            \
  EXPORT int name(int dirfd, const char* path, int flags) { \
    int fd = get_##name()(dirfd, path, flags);              \
    after_open(fd, dirfd, path, flags);                     \
    return fd;                                              \
  }
OPENAT2_LIKE(__openat_2)
OPENAT2_LIKE(__openat64_2)

#define CREAT_LIKE(name)                                \
  DECLARE_REAL(int, name, const char*, mode_t)          \
  EXPORT int name(const char* path, mode_t mode) {      \
    int fd = get_##name()(path, mode);                  \
    after_open(fd, AT_FDCWD, path, O_WRONLY | O_CREAT); \
    return fd;                                          \
  }
CREAT_LIKE(creat)
CREAT_LIKE(creat64)

static int fopen_flags(const char* mode) {
  if (!mode) return O_RDONLY;
  if (mode[0] == 'r') return strchr(mode, '+') ? O_RDWR : O_RDONLY;
  if (mode[0] == 'a') return O_WRONLY | O_CREAT | O_APPEND;
  return O_WRONLY | O_CREAT | O_TRUNC;  // "w", "x"
}

#define FOPEN_LIKE(name)                                       \
  DECLARE_REAL(FILE*, name, const char*, const char*)          \
  EXPORT FILE* name(const char* path, const char* mode) {      \
    FILE* f = get_##name()(path, mode);                        \
    after_open(f ? 0 : -1, AT_FDCWD, path, fopen_flags(mode)); \
    return f;                                                  \
  }
FOPEN_LIKE(fopen)
FOPEN_LIKE(fopen64)

#define FREOPEN_LIKE(name)                                               \
  DECLARE_REAL(FILE*, name, const char*, const char*, FILE*)             \
  EXPORT FILE* name(const char* path, const char* mode, FILE* stream) {  \
    FILE* f = get_##name()(path, mode, stream);                          \
    if (path) after_open(f ? 0 : -1, AT_FDCWD, path, fopen_flags(mode)); \
    return f;                                                            \
  }
FREOPEN_LIKE(freopen)
FREOPEN_LIKE(freopen64)

// ---- looking files up ------------------------------------------------------

#define STAT_LIKE(name, type)                   \
  DECLARE_REAL(int, name, const char*, type*)   \
  EXPORT int name(const char* path, type* st) { \
    int r = get_##name()(path, st);             \
    after_lookup(r, AT_FDCWD, path);            \
    return r;                                   \
  }
STAT_LIKE(stat, struct stat)
STAT_LIKE(lstat, struct stat)
STAT_LIKE(stat64, struct stat64)
STAT_LIKE(lstat64, struct stat64)

// Only older programs call these (glibc 2.33 made stat a function): the
// real one may be missing from a newer libc.
#define XSTAT_LIKE(name, type)                           \
  DECLARE_REAL(int, name, int, const char*, type*)       \
  EXPORT int name(int ver, const char* path, type* st) { \
    if (!get_##name()) {                                 \
      errno = ENOSYS;                                    \
      return -1;                                         \
    }                                                    \
    int r = get_##name()(ver, path, st);                 \
    after_lookup(r, AT_FDCWD, path);                     \
    return r;                                            \
  }
XSTAT_LIKE(__xstat, struct stat)
XSTAT_LIKE(__lxstat, struct stat)
XSTAT_LIKE(__xstat64, struct stat64)
XSTAT_LIKE(__lxstat64, struct stat64)

#define FSTATAT_LIKE(name, type)                                         \
  DECLARE_REAL(int, name, int, const char*, type*, int)                  \
  EXPORT int name(int dirfd, const char* path, type* st, int flags) {    \
    int r = get_##name()(dirfd, path, st, flags);                        \
    if (!(flags & AT_EMPTY_PATH) || *path) after_lookup(r, dirfd, path); \
    return r;                                                            \
  }
FSTATAT_LIKE(fstatat, struct stat)
FSTATAT_LIKE(fstatat64, struct stat64)

DECLARE_REAL(int, __fxstatat, int, int, const char*, struct stat*, int)
EXPORT int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  if (!get___fxstatat()) {
    errno = ENOSYS;
    return -1;
  }
  int r = get___fxstatat()(ver, dirfd, path, st, flags);
  after_lookup(r, dirfd, path);
  return r;
}
DECLARE_REAL(int, __fxstatat64, int, int, const char*, struct stat64*, int)
EXPORT int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  if (!get___fxstatat64()) {
    errno = ENOSYS;
    return -1;
  }
  int r = get___fxstatat64()(ver, dirfd, path, st, flags);
  after_lookup(r, dirfd, path);
  return r;
}

DECLARE_REAL(int, statx, int, const char*, int, unsigned, struct statx*)
EXPORT int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* st) {
  int r = get_statx()(dirfd, path, flags, mask, st);
  if (!(flags & AT_EMPTY_PATH) || *path) after_lookup(r, dirfd, path);
  return r;
}

DECLARE_REAL(int, access, const char*, int)
EXPORT int access(const char* path, int mode) {
  int r = get_access()(path, mode);
  after_lookup(r, AT_FDCWD, path);
  return r;
}
DECLARE_REAL(int, euidaccess, const char*, int)
EXPORT int euidaccess(const char* path, int mode) {
  int r = get_euidaccess()(path, mode);
  after_lookup(r, AT_FDCWD, path);
  return r;
}
DECLARE_REAL(int, eaccess, const char*, int)
EXPORT int eaccess(const char* path, int mode) {
  int r = get_eaccess()(path, mode);
  after_lookup(r, AT_FDCWD, path);
  return r;
}
DECLARE_REAL(int, faccessat, int, const char*, int, int)
EXPORT int faccessat(int dirfd, const char* path, int mode, int flags) {
  int r = get_faccessat()(dirfd, path, mode, flags);
  after_lookup(r, dirfd, path);
  return r;
}

DECLARE_REAL(char*, realpath, const char*, char*)
EXPORT char* realpath(const char* path, char* resolved) {
  char* r = get_realpath()(path, resolved);
  after_lookup(r ? 0 : -1, AT_FDCWD, path);
  return r;
}

DECLARE_REAL(ssize_t, readlink, const char*, char*, size_t)
EXPORT ssize_t readlink(const char* path, char* buf, size_t size) {
  ssize_t r = get_readlink()(path, buf, size);
  if (r < 0 && absent_errno(errno)) record_path('A', AT_FDCWD, path);
  return r;
}

// ---- listing directories ---------------------------------------------------

DECLARE_REAL(DIR*, opendir, const char*)
EXPORT DIR* opendir(const char* path) {
  DIR* d = get_opendir()(path);
  if (d)
    record_path('L', AT_FDCWD, path);
  else if (absent_errno(errno))
    record_path('A', AT_FDCWD, path);
  return d;
}

typedef int (*scandir_filter)(const struct dirent*);
typedef int (*scandir_compare)(const struct dirent**, const struct dirent**);
DECLARE_REAL(int, scandir, const char*, struct dirent***, scandir_filter, scandir_compare)
EXPORT int scandir(const char* path, struct dirent*** list, scandir_filter filter,
                   scandir_compare compare) {
  int r = get_scandir()(path, list, filter, compare);
  if (r >= 0)
    record_path('L', AT_FDCWD, path);
  else if (absent_errno(errno))
    record_path('A', AT_FDCWD, path);
  return r;
}

DECLARE_REAL(int, scandir64, const char*, struct dirent64***, int (*)(const struct dirent64*),
             int (*)(const struct dirent64**, const struct dirent64**))
EXPORT int scandir64(const char* path, struct dirent64*** list,
                     int (*filter)(const struct dirent64*),
                     int (*compare)(const struct dirent64**, const struct dirent64**)) {
  int r = get_scandir64()(path, list, filter, compare);
  if (r >= 0)
    record_path('L', AT_FDCWD, path);
  else if (absent_errno(errno))
    record_path('A', AT_FDCWD, path);
  return r;
}

// ---- writing ----------------------------------------------------------------

DECLARE_REAL(int, rename, const char*, const char*)
EXPORT int rename(const char* from, const char* to) {
  int r = get_rename()(from, to);
  if (r == 0) record_path('W', AT_FDCWD, to);
  return r;
}
DECLARE_REAL(int, renameat, int, const char*, int, const char*)
EXPORT int renameat(int fromfd, const char* from, int tofd, const char* to) {
  int r = get_renameat()(fromfd, from, tofd, to);
  if (r == 0) record_path('W', tofd, to);
  return r;
}

// ---- moving ------------------------------------------------------------------

DECLARE_REAL(int, chdir, const char*)
EXPORT int chdir(const char* path) {
  int r = get_chdir()(path);
  if (r == 0) g_moved = 1;
  return r;
}
DECLARE_REAL(int, fchdir, int)
EXPORT int fchdir(int fd) {
  int r = get_fchdir()(fd);
  if (r == 0) g_moved = 1;
  return r;
}

// ---- loading -------------------------------------------------------------------

DECLARE_REAL(void*, dlopen, const char*, int)
EXPORT void* dlopen(const char* path, int flags) {
  void* h = get_dlopen()(path, flags);
  if (h && path) {
    struct link_map* map = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0] == '/')
      record_path('R', AT_FDCWD, map->l_name);
  } else if (!h && path && strchr(path, '/')) {
    record_path('A', AT_FDCWD, path);
  }
  return h;
}

// ---- running programs -------------------------------------------------------

// `file` as execvp would find it on PATH: each miss recorded as absent.
static void find_on_path(const char* file, char* out, size_t size) {
  out[0] = '\0';
  if (strchr(file, '/')) {
    snprintf(out, size, "%s", file);
    return;
  }
  const char* path = real_getenv_fn ? real_getenv_fn("PATH") : NULL;
  if (!path) path = "/bin:/usr/bin";
  while (*path) {
    const char* end = strchr(path, ':');
    size_t len = end ? (size_t)(end - path) : strlen(path);
    char candidate[PATH_MAX];
    if (len == 0)
      snprintf(candidate, sizeof candidate, "%s", file);
    else
      snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, path, file);
    if (syscall(SYS_faccessat, AT_FDCWD, candidate, X_OK, 0) == 0) {
      snprintf(out, size, "%s", candidate);
      return;
    }
    if (absent_errno(errno)) record_path('A', AT_FDCWD, candidate);
    if (!end) break;
    path = end + 1;
  }
}

static void exec_attempt(const char* path) {
  if (path) put('X', path, strlen(path), 0);
}
static void exec_failed(const char* path) {
  if (path) put('F', path, strlen(path), 0);
}

DECLARE_REAL(int, execve, const char*, char* const[], char* const[])
EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  exec_attempt(path);
  int r = get_execve()(path, argv, envp);
  exec_failed(path);
  return r;
}
DECLARE_REAL(int, execv, const char*, char* const[])
EXPORT int execv(const char* path, char* const argv[]) {
  exec_attempt(path);
  int r = get_execv()(path, argv);
  exec_failed(path);
  return r;
}
DECLARE_REAL(int, execvpe, const char*, char* const[], char* const[])
EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  char found[PATH_MAX];
  find_on_path(file, found, sizeof found);
  exec_attempt(found[0] ? found : file);
  int r = get_execvpe()(file, argv, envp);
  exec_failed(found[0] ? found : file);
  return r;
}
DECLARE_REAL(int, execvp, const char*, char* const[])
EXPORT int execvp(const char* file, char* const argv[]) {
  char found[PATH_MAX];
  find_on_path(file, found, sizeof found);
  exec_attempt(found[0] ? found : file);
  int r = get_execvp()(file, argv);
  exec_failed(found[0] ? found : file);
  return r;
}
DECLARE_REAL(int, fexecve, int, char* const[], char* const[])
EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  char link[64] = "/proc/self/fd/", target[PATH_MAX];
  size_t at = strlen(link);
  at += decimal(link + at, (unsigned long)fd);
  link[at] = '\0';
  ssize_t n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof target - 1);
  target[n > 0 ? n : 0] = '\0';
  exec_attempt(target);
  int r = get_fexecve()(fd, argv, envp);
  exec_failed(target);
  return r;
}

// The execl family: the variadic words gathered, then execv/execvp/execve.
#define MAX_EXECL_WORDS 4096
static int gather(const char* first, va_list ap, char** words, char*** envp_out) {
  int n = 0;
  words[n++] = (char*)first;
  while (n < MAX_EXECL_WORDS) {
    char* word = va_arg(ap, char*);
    words[n++] = word;
    if (!word) break;
  }
  if (envp_out) *envp_out = va_arg(ap, char**);
  return n;
}
EXPORT int execl(const char* path, const char* arg, ...) {
  char* words[MAX_EXECL_WORDS + 1];
  va_list ap;
  va_start(ap, arg);
  gather(arg, ap, words, NULL);
  va_end(ap);
  return execv(path, words);
}
EXPORT int execlp(const char* file, const char* arg, ...) {
  char* words[MAX_EXECL_WORDS + 1];
  va_list ap;
  va_start(ap, arg);
  gather(arg, ap, words, NULL);
  va_end(ap);
  return execvp(file, words);
}
EXPORT int execle(const char* path, const char* arg, ...) {
  char* words[MAX_EXECL_WORDS + 1];
  char** envp = NULL;
  va_list ap;
  va_start(ap, arg);
  gather(arg, ap, words, &envp);
  va_end(ap);
  return execve(path, words, envp);
}

// posix_spawn runs the program in a child: its exec is recorded under the
// child's pid, once the spawn has succeeded.
static void spawned(int result, const pid_t* pid, const char* path) {
  if (result != 0 || !path) return;
  char buf[PATH_MAX + 32];
  size_t at = 0;
  buf[at++] = 'X';
  at += decimal(buf + at, pid ? (unsigned long)*pid : 0ul);
  buf[at++] = ' ';
  size_t len = strlen(path);
  if (len > sizeof buf - at - 1) len = sizeof buf - at - 1;
  memcpy(buf + at, path, len);
  at += len;
  buf[at++] = '\0';
  if (!g_dir_len) return;
  int saved_errno = errno;
  lock();
  int fd = record_fd();
  if (fd >= 0) {
    ssize_t done = write(fd, buf, at);
    (void)done;
  }
  unlock();
  errno = saved_errno;
}

DECLARE_REAL(int, posix_spawn, pid_t*, const char*, const posix_spawn_file_actions_t*,
             const posix_spawnattr_t*, char* const[], char* const[])
EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                       const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  pid_t child = 0;
  int r = get_posix_spawn()(&child, path, actions, attr, argv, envp);
  if (pid) *pid = child;
  spawned(r, &child, path);
  return r;
}
DECLARE_REAL(int, posix_spawnp, pid_t*, const char*, const posix_spawn_file_actions_t*,
             const posix_spawnattr_t*, char* const[], char* const[])
EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                        const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  char found[PATH_MAX];
  find_on_path(file, found, sizeof found);
  pid_t child = 0;
  int r = get_posix_spawnp()(&child, file, actions, attr, argv, envp);
  if (pid) *pid = child;
  spawned(r, &child, found[0] ? found : file);
  return r;
}

// ---- the environment -----------------------------------------------------------

static void variable_read(const char* name, const char* value) {
  if (!name || strncmp(name, "KBUILD_OBSERVE_", 15) == 0) return;
  char buf[PATH_MAX * 2];
  size_t nlen = strlen(name);
  if (nlen >= sizeof buf - 2) return;
  memcpy(buf, name, nlen);
  size_t at = nlen;
  if (value) {
    buf[at++] = '=';
    size_t vlen = strlen(value);
    if (vlen > sizeof buf - at - 1) vlen = sizeof buf - at - 1;
    memcpy(buf + at, value, vlen);
    at += vlen;
  }
  put(value ? 'E' : 'N', buf, at, 1);
}

EXPORT char* getenv(const char* name) {
  if (!real_getenv_fn) real_getenv_fn = (char* (*)(const char*))dlsym(RTLD_NEXT, "getenv");
  char* value = real_getenv_fn ? real_getenv_fn(name) : NULL;
  variable_read(name, value);
  return value;
}
DECLARE_REAL(char*, secure_getenv, const char*)
EXPORT char* secure_getenv(const char* name) {
  char* value = get_secure_getenv()(name);
  variable_read(name, value);
  return value;
}

// setlocale(..., "") reads LC_ALL, the category's variable and LANG inside
// libc, where getenv is not seen: they decide the source's default charset.
static const char* const kLocaleVariables[] = {"LC_ALL",      "LC_CTYPE",   "LC_NUMERIC",
                                               "LC_TIME",     "LC_COLLATE", "LC_MONETARY",
                                               "LC_MESSAGES", "LANG"};
#include <locale.h>
DECLARE_REAL(char*, setlocale, int, const char*)
EXPORT char* setlocale(int category, const char* locale) {
  if (locale && !*locale && real_getenv_fn)
    for (size_t i = 0; i < sizeof kLocaleVariables / sizeof *kLocaleVariables; ++i)
      variable_read(kLocaleVariables[i], real_getenv_fn(kLocaleVariables[i]));
  return get_setlocale()(category, locale);
}
