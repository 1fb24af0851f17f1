// error: kbuild::Error (with its exit code and stage) and Result<T>, the two ways a failure is
// reported.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

// Errors carry the stage that failed and map to documented exit codes.
namespace kbuild {

// What went wrong, coarse enough for scripts to branch on.
// The exit codes are part of the CLI contract (README, "Exit codes").
// Each kind belongs to one failure stage (usage, config, provider, compile,
// link, load, internal); interrupted is the one non-failure.
enum class ErrorKind {
  usage,             // usage: bad command line
  input,             // usage: a source is missing, unreadable or not a file
  output,            // usage: the output location cannot be written
  config,            // config: a device file is malformed or invalid
  provider,          // provider: a device provider failed (variable, exec, xpu...)
  compiler_missing,  // compile: the compiler cannot be found or started
  compile_failed,    // compile: the compiler failed compiling (or crashed)
  link_failed,       // link: the link step failed (missing library, undefined symbol)
  load_failed,       // load: the built library does not load (--check-load)
  interrupted,       // kbuild was interrupted by a signal
  internal,          // internal: a bug in kbuild
};

int exit_code(ErrorKind kind);
// The stage name printed as `kbuild: error[STAGE]: ...`.
const char* stage_name(ErrorKind kind);
// The stage a documented exit code stands for ("" for 0 or an unknown code).
const char* stage_of_exit_code(int code);

class Error : public std::runtime_error {
 public:
  // `message` is the single line shown first; `detail` (optional, may be
  // multi-line) follows it, e.g. a provider's stderr.
  Error(ErrorKind kind, const std::string& message, std::string detail = {})
      : std::runtime_error(message), kind_(kind), detail_(std::move(detail)) {}

  ErrorKind kind() const { return kind_; }
  const std::string& detail() const { return detail_; }

 private:
  ErrorKind kind_;
  std::string detail_;
};

}  // namespace kbuild

// The one non-throwing way to report a failure: a value or the reason there
// is none. Used where a failure is expected and handled on the spot (a cache
// miss, a file that cannot be trusted); kbuild::Error is for failures that
// end the command.
namespace kbuild {

// Why something failed, as a message a user can act on, and the kind of
// Error it is where a caller ends the command with it (Result::error()).
struct Failure {
  std::string why;
  ErrorKind kind = ErrorKind::internal;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}              // NOLINT(google-explicit-constructor)
  Result(Failure failure) : failure_(std::move(failure)) {}  // NOLINT(google-explicit-constructor)

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // The reason, when there is no value ("" otherwise).
  const std::string& why() const { return failure_.why; }
  // The failure's kind (internal unless the failure named one).
  ErrorKind kind() const { return failure_.kind; }
  // The failure as the Error that ends a command (ask operator bool first).
  Error error() const { return Error(failure_.kind, failure_.why); }
  // The value, or `fallback` where the caller has no use for the reason.
  T value_or(T fallback) const& { return value_ ? *value_ : std::move(fallback); }
  T value_or(T fallback) && { return value_ ? std::move(*value_) : std::move(fallback); }

 private:
  std::optional<T> value_;
  Failure failure_;
};

// For operations that return nothing but may fail.
struct Done {};
using Status = Result<Done>;
inline Status ok() {
  return Done{};
}

}  // namespace kbuild
