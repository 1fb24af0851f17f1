// server_result: what a cache server's exchange gives back, a value or a
// typed failure. The kind (down, timeout, refused, too large) is decided
// where the failure happens (the poll that ran out of time, the connect
// that failed, the server's error reply), so no caller reads it back from
// the message, which is for people.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "kbuild/error.hpp"

namespace kbuild {

// Why a server did not give what was asked.
enum class Fault {
  down,       // it cannot be reached, closed the connection, or answered out of step
  timeout,    // it did not answer (or accept the connection) in time
  refused,    // it answered with an error (full, read-only, wrong password...)
  too_large,  // its answer is longer than the reader accepts
};

inline const char* fault_name(Fault fault) {
  switch (fault) {
    case Fault::down: return "down";
    case Fault::timeout: return "timeout";
    case Fault::refused: return "refused";
    case Fault::too_large: return "too large";
  }
  return "down";
}

// A failure of a server exchange: its kind and one line saying why.
struct Faulted {
  Fault fault = Fault::down;
  std::string why;
};

// A value, or a Faulted. The same shape as Result<T> (`if (!r) r.why()`),
// with the kind besides.
template <class T>
class [[nodiscard]] ServerResult {
 public:
  ServerResult(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  ServerResult(Faulted faulted)                        // NOLINT(google-explicit-constructor)
      : faulted_(std::move(faulted)) {}

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // The failure's kind (down when there is none: ask operator bool first).
  Fault fault() const { return faulted_.fault; }
  // The reason, when there is no value ("" otherwise).
  const std::string& why() const { return faulted_.why; }
  // The failure with `prefix` before its reason (the command that failed).
  Faulted faulted(const std::string& prefix = "") const {
    return {faulted_.fault, prefix + faulted_.why};
  }

 private:
  std::optional<T> value_;
  Faulted faulted_;
};

using ServerStatus = ServerResult<Done>;

}  // namespace kbuild
