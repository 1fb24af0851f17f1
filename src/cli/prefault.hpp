#pragma once

namespace kbuild::cli {

// Maps the program's read-only segments (code, constants, unwind tables) in
// one call each instead of a page fault per 64 KiB touched: a dry run
// touches nearly all of the static binary's code, and on a virtual machine
// each fault is a trip through the hypervisor (docs/performance.md).
// Best effort: a kernel older than Linux 5.14 refuses, and nothing changes.
void prefault_program_text();

}  // namespace kbuild::cli
