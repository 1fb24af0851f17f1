// cache_key: the parts only the library uses (the API: kbuild/cache_key.hpp).
#pragma once

#include <string>
#include <vector>

// What the files a compile read ask of the world that no dependency list
// names: the date and time (__DATE__, __TIME__, __TIMESTAMP__), files pulled
// in by the assembler (.incbin in an asm statement), and headers whose mere
// existence was asked (__has_include, __has_include_next). A cheap scan of
// their bytes at store time; a hit never scans.
namespace kbuild {

struct HasIncludeProbe {
  std::string name;  // as written between the quotes or brackets
  bool quoted = false;
  std::string from;  // the file that asks (a quoted name is looked for beside it)
};

struct SourceScan {
  std::string uses_clock;  // the first file naming __DATE__/__TIME__/__TIMESTAMP__, or ""
  std::string incbin;      // the first file with an .incbin, or ""
  std::vector<HasIncludeProbe> probes;
};

SourceScan scan_sources(const std::vector<std::string>& files);

// The paths where each probe's name could have been found, in the order the
// compiler looks (beside the asking file for a quoted name, then `search`),
// up to and including the first that exists: the ones absent must stay so,
// the one present must stay present.
struct ProbeRecords {
  std::vector<std::string> absent, present;
};
ProbeRecords probe_records(const std::vector<HasIncludeProbe>& probes,
                           const std::vector<std::string>& search);

}  // namespace kbuild
