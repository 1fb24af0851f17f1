// What the observer (src/observer) would have recorded, written by a test
// that plays the compiler: the records' format as the observer's header
// comment gives it, typed out here, never produced by kbuild's reader.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/process.hpp"

namespace kbuild_test {

struct FakeRecords {
  std::vector<std::string> read, absent, written, listed;
  std::vector<std::pair<std::string, std::optional<std::string>>> variables;
};

// Writes, in the directory the build's environment names (KBUILD_OBSERVE_DIR),
// one program image's records: it reported in as `program` (its real path)
// and did what `records` says. Nothing when the build is not observed.
inline void write_fake_records(const kbuild::ProcessRequest& options, const std::string& program,
                               const FakeRecords& records) {
  if (!options.environment) return;
  std::optional<std::string> dir = options.environment->get("KBUILD_OBSERVE_DIR");
  if (!dir) return;
  // The image an exec of `program` starts: a script's interpreter (#!).
  std::error_code ec;
  std::string image = std::filesystem::canonical(program, ec).string();
  std::string head;
  if (!ec && std::getline(std::ifstream(image), head) && head.rfind("#!", 0) == 0)
    image = std::filesystem::canonical(head.substr(2, head.find(' ', 2) - 2), ec).string();
  const std::string pid = std::to_string(::getpid());
  std::string bytes = "P" + pid + " " + (ec ? program : image) + '\0';
  auto add = [&](char kind, const std::string& payload) {
    bytes += kind + pid + " " + payload + '\0';
  };
  for (const std::string& p : records.read) add('R', p);
  for (const std::string& p : records.absent) add('A', p);
  for (const std::string& p : records.written) add('W', p);
  for (const std::string& p : records.listed) add('L', p);
  for (const auto& [name, value] : records.variables)
    add(value ? 'E' : 'N', value ? name + "=" + *value : name);
  static int serial = 0;
  std::ofstream(*dir + "/" + pid + ".fake" + std::to_string(serial++), std::ios::binary) << bytes;
}

}  // namespace kbuild_test
