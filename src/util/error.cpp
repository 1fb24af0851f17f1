
#include "kbuild/error.hpp"

namespace kbuild {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return 2;
    case ErrorKind::config: return 3;
    case ErrorKind::provider: return 4;
    case ErrorKind::compile_failed: return 5;
    case ErrorKind::link_failed: return 6;
    case ErrorKind::load_failed: return 7;
    case ErrorKind::input: return 8;
    case ErrorKind::output: return 9;
    case ErrorKind::compiler_missing: return 10;
    case ErrorKind::interrupted: return 130;
    case ErrorKind::internal: return 70;
  }
  return 70;
}

const char* stage_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
    case ErrorKind::input:
    case ErrorKind::output: return "usage";
    case ErrorKind::config: return "config";
    case ErrorKind::provider: return "provider";
    case ErrorKind::compiler_missing:
    case ErrorKind::compile_failed: return "compile";
    case ErrorKind::link_failed: return "link";
    case ErrorKind::load_failed: return "load";
    case ErrorKind::interrupted: return "interrupted";
    case ErrorKind::internal: return "internal";
  }
  return "internal";
}

const char* stage_of_exit_code(int code) {
  for (ErrorKind kind : {ErrorKind::usage, ErrorKind::input, ErrorKind::output, ErrorKind::config,
                         ErrorKind::provider, ErrorKind::compiler_missing,
                         ErrorKind::compile_failed, ErrorKind::link_failed, ErrorKind::load_failed,
                         ErrorKind::interrupted, ErrorKind::internal})
    if (exit_code(kind) == code) return stage_name(kind);
  return "";
}

}  // namespace kbuild
