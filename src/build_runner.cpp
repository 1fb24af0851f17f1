#include "kbuild/build_runner.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "kbuild/error.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

void check_sources(const std::vector<std::string>& sources, const std::string& output) {
  for (const std::string& s : sources) {
    struct stat st {};
    if (stat(s.c_str(), &st) != 0)
      throw Error(ErrorKind::input, "source " + s + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      throw Error(ErrorKind::input, "source " + s + " is not a regular file");
    if (access(s.c_str(), R_OK) != 0)
      throw Error(ErrorKind::input, "source " + s + " is not readable");
    std::error_code ec;
    if (fs::equivalent(s, output, ec))
      throw Error(ErrorKind::usage, "output " + output + " is also a source; choose another -o");
  }
}

void check_output_dir(const std::string& output) {
  std::string dir = fs::path(output).parent_path().string();
  if (dir.empty()) dir.assign(1, '.');
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    throw Error(ErrorKind::output, "output directory " + dir + " does not exist; create it first");
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::output, "output directory " + dir + " is not a directory");
  struct stat out {};
  if (stat(output.c_str(), &out) == 0 && S_ISDIR(out.st_mode))
    throw Error(ErrorKind::output,
                "output " + output + " is a directory; give a file name with -o");
}

// Creates the temporary file the compiler will overwrite: proves the
// directory is writable (permission bits alone say nothing for root or on a
// read-only mount) and reserves the unique name.
void reserve_temporary(const std::string& tmp, const std::string& output) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::output, "cannot write beside " + output + ": " + std::strerror(errno) +
                                       "; choose a writable output directory");
  ::close(fd);
}

}  // namespace

std::string temporary_output_path(const std::string& output) {
  fs::path p(output);
  static std::mt19937_64 rng{std::random_device{}()};
  // Built by appending: g++ 12 warns falsely (-Wrestrict) on literal + string chains here.
  std::string name = ".";
  name += p.filename().string();
  name += ".kbuild-tmp.";
  name += std::to_string(getpid());
  name += '.';
  name += std::to_string(rng() % 1000000);
  return (p.parent_path() / name).string();
}

BuildOutcome run_build(const BuildPlan& plan, const std::vector<std::string>& sources,
                       const Environment& env) {
  check_sources(sources, plan.output);
  check_output_dir(plan.output);

  std::vector<std::string> argv = plan.command.argv;
  auto compiler = find_executable(argv[0], env);
  if (!compiler)
    throw Error(ErrorKind::compiler_missing,
                "compiler '" + argv[0] +
                    "' not found or not executable; install it, or choose "
                    "one with --cxx PATH or the CXX variable");
  argv[0] = *compiler;
  // From here until the temporary is renamed or removed, an interrupt is
  // taken only while the compiler runs (where it is handled).
  InterruptGuard guard;
  const std::string tmp = temporary_output_path(plan.output);
  reserve_temporary(tmp, plan.output);
  argv[plan.command.output_index] = tmp;

  ProcessOptions opts;
  opts.handle_interrupts = true;
  opts.environment = &env;
  auto start = std::chrono::steady_clock::now();
  BuildOutcome outcome;
  std::error_code ec;
  try {
    outcome.process = run_process(argv, opts);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const ProcessResult& p = outcome.process;
  if (!p.success()) {
    fs::remove(tmp, ec);
    if (p.interrupted_by)
      throw Error(ErrorKind::interrupted,
                  "interrupted; the compiler was stopped and " + plan.output + " left as it was");
    throw Error(ErrorKind::toolchain_failed,
                "compiler failed (" + p.describe() + "); " + plan.output + " left as it was");
  }
  fs::rename(tmp, plan.output, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    throw Error(ErrorKind::output, "cannot move the result into " + plan.output + ": " + why);
  }
  return outcome;
}

}  // namespace kbuild
