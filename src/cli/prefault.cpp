#include "prefault.hpp"

#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace kbuild::cli {

namespace {

std::uintptr_t page_size() {
  return static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
}

void populate(std::uintptr_t start, std::uintptr_t end, int advice) {
  start &= ~(page_size() - 1);
  if (end <= start) return;
  // An address as the kernel takes it: from the program headers or the
  // program break, an integer by nature.
  void* const first_page = reinterpret_cast<void*>(start);  // NOLINT(performance-no-int-to-ptr)
  (void)::madvise(first_page, end - start, advice);
}

// Called for the program, the first object listed; returning non-zero ends
// the walk, so shared libraries (a sanitizer build's) fault in as usual.
// Writable segments (data, bss) are populated for writing: each first
// write would otherwise fault for a fresh page.
int populate_segments(struct dl_phdr_info* info, std::size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    const bool writable = (segment.p_flags & PF_W) != 0;
    populate(start, start + segment.p_memsz, writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
  }
  return 1;
}

// The heap a dry run grows to (276 KiB at its peak) in one call: malloc
// extends the program break by this much more whenever it grows it, and the
// pages are made at once instead of one fault each.
void populate_heap() {
  constexpr int kHeadroom = 384 * 1024;
  (void)::mallopt(M_TOP_PAD, kHeadroom);
  const auto before = reinterpret_cast<std::uintptr_t>(::sbrk(0));
  // Small enough for the heap (not a mapping of its own): malloc grows the
  // break unless its free space already holds it.
  void* const block = std::malloc(64 * 1024);  // NOLINT(cppcoreguidelines-no-malloc)
  std::free(block);                            // NOLINT(cppcoreguidelines-no-malloc)
  const auto after = reinterpret_cast<std::uintptr_t>(::sbrk(0));
  populate(before + page_size() - 1, after, MADV_POPULATE_WRITE);
}

}  // namespace

void prefault_program_text() {
  ::dl_iterate_phdr(populate_segments, nullptr);
  populate_heap();
}

}  // namespace kbuild::cli
