#include "kbuild/error.hpp"

namespace kbuild {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return 2;
    case ErrorKind::input:
      return 2;
    case ErrorKind::config:
      return 3;
    case ErrorKind::provider:
      return 4;
    case ErrorKind::toolchain_failed:
      return 5;
    case ErrorKind::compiler_missing:
      return 6;
    case ErrorKind::output:
      return 7;
    case ErrorKind::interrupted:
      return 130;
    case ErrorKind::internal:
      return 70;
  }
  return 70;
}

const char* stage_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return "usage";
    case ErrorKind::input:
      return "input";
    case ErrorKind::output:
      return "output";
    case ErrorKind::config:
      return "config";
    case ErrorKind::provider:
      return "provider";
    case ErrorKind::compiler_missing:
      return "toolchain";
    case ErrorKind::toolchain_failed:
      return "toolchain";
    case ErrorKind::interrupted:
      return "interrupted";
    case ErrorKind::internal:
      return "internal";
  }
  return "internal";
}

}  // namespace kbuild
