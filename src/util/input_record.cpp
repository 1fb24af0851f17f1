#include "util/input_record.hpp"

#include <sys/stat.h>

namespace kbuild {

namespace {
// One run, one record: the CLI starts it before anything is read.
std::optional<InputRecord>& the_record() {
  static std::optional<InputRecord> record;
  return record;
}
}  // namespace

void start_recording_inputs() {
  the_record().emplace();
}

void stop_recording_inputs() {
  the_record().reset();
}

const InputRecord* recorded_inputs() {
  return the_record() ? &*the_record() : nullptr;
}

void record_input(const std::string& path) {
  if (the_record() && !path.empty()) the_record()->paths.insert(path);
}

std::optional<std::string> attributes_now(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
         std::to_string(st.st_mode) + ':' + std::to_string(st.st_uid) + ':' +
         std::to_string(st.st_gid);
}

void record_attributes(const std::string& path) {
  if (the_record() && !path.empty() && !the_record()->attributes.count(path))
    the_record()->attributes.emplace(path, attributes_now(path));
}

void record_content(const std::string& path, const std::optional<std::string>& bytes) {
  if (the_record()) the_record()->contents.emplace(path, bytes);
}

void record_variable(const std::string& name) {
  if (the_record()) the_record()->variables.insert(name);
}

void record_cpu_read() {
  if (the_record()) the_record()->cpu_read = true;
}

void record_uncacheable() {
  if (the_record()) the_record()->uncacheable = true;
}

}  // namespace kbuild
