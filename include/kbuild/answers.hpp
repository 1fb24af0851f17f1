// answers: what the Driver's commands give back to print (plain data):
// devices, doctor's checks, the ISA answer, cache counts, signing keys.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace kbuild {

// A backend a provider offers, with the layers it applies in order.
struct BackendInfo {
  std::string name;
  std::string description;
  std::vector<std::string> chain;  // layer names, parents first, ending with the backend
  bool is_default = false;
};

struct DeviceListing {
  std::string name;
  std::string kind;    // "built-in", "config", "exec"
  std::string source;  // "built-in" or the device file
  std::string mode;    // "replace" / "extend" for registered devices, "" for built-ins
  std::vector<std::string> overridden;  // sources this registration replaced
  std::vector<BackendInfo> backends;
};

enum class CheckStatus { ok, warn, fail };

struct DoctorCheck {
  std::string name;
  CheckStatus status = CheckStatus::ok;
  std::string detail;
  std::string hint;  // what to do, for warn and fail
};

struct IsaAnswer {
  nlohmann::ordered_json json;        // README, "kbuild isa": its fields
  std::vector<std::string> notes;     // a probe that failed, the profile that stood in
  std::vector<std::string> warnings;  // the remote cache's problem, ATEN_CPU_CAPABILITY's
};

struct CacheStats {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  std::uint64_t hits = 0;    // local hits (a remote hit is RemoteStats::hits)
  std::uint64_t misses = 0;  // compiled: no entry here or in the remote cache
  // Misses whose output could not be stored, and how many for each reason
  // ("side_output", "clock", ...: docs/cache.md), by name.
  std::uint64_t uncacheable = 0;
  std::vector<std::pair<std::string, std::uint64_t>> uncacheable_by_reason;
};

// Counts kept in the local cache's stats.json.
struct RemoteStats {
  std::uint64_t hits = 0, misses = 0, errors = 0, bytes_down = 0, bytes_up = 0;
};

struct CacheSummary {
  std::string directory;
  bool exists = false;  // false: no cache yet (every count 0)
  std::uint64_t max_bytes = 0;
  CacheStats local;
  RemoteStats remote;
};

// `kbuild cache check`: the remote cache a routed compile would use.
struct RemoteCacheCheck {
  std::string address;  // as shown (its userinfo as ***); empty: none is set
  std::string from;     // "--remote-cache" or "KBUILD_REMOTE_CACHE"
};

struct SigningKeys {
  std::string secret_hex;  // 64 hex digits (the seed)
  std::string public_hex;  // 64 hex digits
};

}  // namespace kbuild
