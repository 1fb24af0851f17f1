// CBOR written and read with the JSON library, for tests that make or alter
// a manifest by hand: never through kbuild's own codec (run/manifest.hpp),
// which they check.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kbuild_test {

inline std::string to_cbor(const nlohmann::json& j) {
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(j);
  return std::string(bytes.begin(), bytes.end());
}

// nullopt when `bytes` are not CBOR.
inline std::optional<nlohmann::json> parse_manifest(const std::string& bytes) {
  try {
    return nlohmann::json::from_cbor(bytes);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace kbuild_test
