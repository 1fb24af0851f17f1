// Calls every function the observer (src/observer/observer.c) intercepts,
// once each, on names in the directory given: tests/e2e/observer_test.cpp
// runs it with the observer preloaded and reads the records. Each call is
// preceded by a marker variable read (getenv("MARK_<name>")), so a test can
// tell which call a record came from.
//   observer_probe DIR          the calls
//   observer_probe --child      what the exec calls run: exit 0
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;
// The fortified entry points _FORTIFY_SOURCE calls open through.
int __open_2(const char*, int);
int __open64_2(const char*, int);
int __openat_2(int, const char*, int);
int __openat64_2(int, const char*, int);

static char dir[4096];

static const char* in_dir(const char* name) {
  static char path[8][4200];
  static int next;
  char* p = path[next++ % 8];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  return p;
}

static void mark(const char* what) {
  char name[128];
  snprintf(name, sizeof name, "MARK_%s", what);
  (void)getenv(name);
}

static void close_if(int fd) {
  if (fd >= 0) close(fd);
}

static void wait_child(pid_t pid) {
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
}

// Runs `call` in a forked child (an exec replaces it), and waits.
#define IN_CHILD(call)  \
  do {                  \
    pid_t pid = fork(); \
    if (pid == 0) {     \
      call;             \
      _exit(127);       \
    }                   \
    wait_child(pid);    \
  } while (0)

static int no_filter(const struct dirent* e) {
  (void)e;
  return 1;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return 0;
  if (argc < 3) return 2;
  snprintf(dir, sizeof dir, "%s", argv[1]);
  const char* self = argv[2];  // this program, by absolute path
  char* child_argv[] = {(char*)self, "--child", NULL};
  struct stat st;
  struct stat64 st64;
  struct statx stx;

  mark("open");
  close_if(open(in_dir("read-open"), O_RDONLY));
  close_if(open(in_dir("absent-open"), O_RDONLY));
  close_if(open(in_dir("written-open"), O_WRONLY | O_CREAT, 0600));
  mark("open64");
  close_if(open64(in_dir("read-open64"), O_RDONLY));
  mark("openat");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  close_if(openat(dfd, "read-openat", O_RDONLY));
  close_if(openat(dfd, "absent-openat", O_RDONLY));
  mark("openat64");
  close_if(openat64(dfd, "read-openat64", O_RDONLY));
  mark("__open_2");
  close_if(__open_2(in_dir("read-open_2"), O_RDONLY));
  close_if(__open64_2(in_dir("read-open64_2"), O_RDONLY));
  close_if(__openat_2(dfd, "read-openat_2", O_RDONLY));
  close_if(__openat64_2(dfd, "read-openat64_2", O_RDONLY));
  mark("creat");
  close_if(creat(in_dir("written-creat"), 0600));
  close_if(creat64(in_dir("written-creat64"), 0600));
  mark("fopen");
  FILE* f = fopen(in_dir("read-fopen"), "r");
  if (f) fclose(f);
  f = fopen(in_dir("written-fopen"), "w");
  if (f) fclose(f);
  f = fopen64(in_dir("read-fopen64"), "r");
  if (f) fclose(f);
  f = fopen(in_dir("absent-fopen"), "r");
  mark("freopen");
  f = fopen("/dev/null", "r");
  if (f) f = freopen(in_dir("read-freopen"), "r", f);
  if (f) fclose(f);
  f = fopen("/dev/null", "r");
  if (f) f = freopen64(in_dir("read-freopen64"), "r", f);
  if (f) fclose(f);
  mark("stat");
  (void)stat(in_dir("absent-stat"), &st);
  (void)lstat(in_dir("absent-lstat"), &st);
  (void)stat64(in_dir("absent-stat64"), &st64);
  (void)lstat64(in_dir("absent-lstat64"), &st64);
  (void)fstatat(dfd, "absent-fstatat", &st, 0);
  (void)fstatat64(dfd, "absent-fstatat64", &st64, 0);
  (void)statx(dfd, "absent-statx", 0, STATX_BASIC_STATS, &stx);
  // The pre-2.33 entry points, as older programs call them: found the way
  // the dynamic linker finds a preloaded definition.
  int (*xstat)(int, const char*, struct stat*) =
      (int (*)(int, const char*, struct stat*))dlsym(RTLD_DEFAULT, "__xstat");
  if (xstat) (void)xstat(1, in_dir("absent-xstat"), &st);
  mark("access");
  (void)access(in_dir("absent-access"), R_OK);
  (void)euidaccess(in_dir("absent-euidaccess"), R_OK);
  (void)eaccess(in_dir("absent-eaccess"), R_OK);
  (void)faccessat(dfd, "absent-faccessat", R_OK, 0);
  mark("realpath");
  char resolved[4200];
  (void)realpath(in_dir("absent-realpath"), resolved);
  (void)readlink(in_dir("absent-readlink"), resolved, sizeof resolved);
  mark("opendir");
  DIR* d = opendir(in_dir("listed-opendir"));
  if (d) closedir(d);
  (void)opendir(in_dir("absent-opendir"));
  struct dirent** names = NULL;
  int n = scandir(in_dir("listed-scandir"), &names, no_filter, alphasort);
  for (int i = 0; i < n; ++i) free(names[i]);
  free(names);
  mark("rename");
  close_if(open(in_dir("from-rename"), O_WRONLY | O_CREAT, 0600));
  (void)rename(in_dir("from-rename"), in_dir("written-rename"));
  close_if(open(in_dir("from-renameat"), O_WRONLY | O_CREAT, 0600));
  (void)renameat(dfd, "from-renameat", dfd, "written-renameat");
  mark("dlopen");
  void* lib = dlopen("libm.so.6", RTLD_NOW);
  if (lib) dlclose(lib);
  mark("getenv");
  (void)getenv("PROBE_SET");
  (void)getenv("PROBE_UNSET");
  (void)secure_getenv("PROBE_SECURE");
  mark("setlocale");
  (void)setlocale(LC_ALL, "");
  mark("exec");
  IN_CHILD(execv(self, child_argv));
  IN_CHILD(execve(self, child_argv, environ));
  IN_CHILD(execvp(self, child_argv));
  IN_CHILD(execvpe(self, child_argv, environ));
  IN_CHILD(execl(self, self, "--child", (char*)NULL));
  IN_CHILD(execlp(self, self, "--child", (char*)NULL));
  IN_CHILD(execle(self, self, "--child", (char*)NULL, environ));
  IN_CHILD({
    int fd = open(self, O_RDONLY);
    fexecve(fd, child_argv, environ);
  });
  IN_CHILD(execv(in_dir("absent-program"), child_argv));  // fails: X then F
  pid_t pid = 0;
  if (posix_spawn(&pid, self, NULL, NULL, child_argv, environ) == 0) wait_child(pid);
  if (posix_spawnp(&pid, self, NULL, NULL, child_argv, environ) == 0) wait_child(pid);
  mark("chdir");
  if (chdir(in_dir("sub")) == 0) close_if(open("read-after-chdir", O_RDONLY));
  if (fchdir(dfd) == 0) close_if(open("read-after-fchdir", O_RDONLY));
  close_if(dfd);
  mark("end");
  return 0;
}
