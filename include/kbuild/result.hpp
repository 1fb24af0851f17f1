// The one non-throwing way to report a failure: a value or the reason there
// is none. Used where a failure is expected and handled on the spot (a cache
// miss, a file that cannot be trusted); kbuild::Error is for failures that
// end the command.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace kbuild {

// Why something failed, as a message a user can act on.
struct Failure {
  std::string why;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}              // NOLINT(google-explicit-constructor)
  Result(Failure failure) : why_(std::move(failure.why)) {}  // NOLINT(google-explicit-constructor)

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // The reason, when there is no value ("" otherwise).
  const std::string& why() const { return why_; }

 private:
  std::optional<T> value_;
  std::string why_;
};

// For operations that return nothing but may fail.
struct Done {};
using Status = Result<Done>;
inline Status ok() {
  return Done{};
}

}  // namespace kbuild
