// What a run looked at, for the plan cache (`kbuild --dry-run` remembers its
// lines keyed by all of it): every file or directory whose content or
// existence was read, every environment variable consulted, whether the CPU
// was read and whether a program ran. The places that read record it here;
// nothing is kept unless the CLI started recording.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

namespace kbuild {

struct InputRecord {
  std::set<std::string> paths;  // stamped (device, inode, size, mtime, ctime)
  // Directories whose entries do not matter, only who may write them (a
  // trust check): device, inode, mode, owner and group, so that files made
  // beside them (in /tmp, say) do not count. Taken before the check reads
  // them, so a change in between is a miss, never a stale answer.
  std::map<std::string, std::optional<std::string>> attributes;
  // Files whose stamp means nothing (/proc, /sys): their bytes, or nullopt.
  std::map<std::string, std::optional<std::string>> contents;
  std::set<std::string> variables;
  bool cpu_read = false;  // /proc/cpuinfo: keyed by the boot (see plan_cache.cpp)
  // A program ran, or a tree was walked: more went in than can be stamped.
  bool uncacheable = false;
};

void start_recording_inputs();
// Forgets the record (tests; a run records until it ends).
void stop_recording_inputs();
// The record so far; nullptr when not recording.
const InputRecord* recorded_inputs();

void record_input(const std::string& path);
void record_attributes(const std::string& path);
// What record_attributes keeps of `path` now; nullopt when it cannot be stated.
std::optional<std::string> attributes_now(const std::string& path);
void record_content(const std::string& path, const std::optional<std::string>& bytes);
void record_variable(const std::string& name);
void record_cpu_read();
void record_uncacheable();

}  // namespace kbuild
