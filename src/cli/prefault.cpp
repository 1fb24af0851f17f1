#include "prefault.hpp"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif

namespace kbuild::cli {

namespace {

// Called for the program, the first object listed; returning non-zero ends
// the walk, so shared libraries (a sanitizer build's) fault in as usual.
int populate_read_only_segments(struct dl_phdr_info* info, std::size_t, void*) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_W) != 0) continue;
    const std::uintptr_t start = (info->dlpi_addr + segment.p_vaddr) & ~(page - 1);
    const std::uintptr_t end = info->dlpi_addr + segment.p_vaddr + segment.p_memsz;
    // The segment's address as the kernel takes it: from the program
    // headers, an integer by nature.
    void* const first_page = reinterpret_cast<void*>(start);  // NOLINT(performance-no-int-to-ptr)
    (void)::madvise(first_page, end - start, MADV_POPULATE_READ);
  }
  return 1;
}

}  // namespace

void prefault_program_text() {
  ::dl_iterate_phdr(populate_read_only_segments, nullptr);
}

}  // namespace kbuild::cli
