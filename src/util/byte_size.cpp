#include "util/byte_size.hpp"

#include <cmath>
#include <cstdio>

namespace kbuild {

std::optional<std::uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty()  ? 1
                 : unit == "K" ? 1024.0
                 : unit == "M" ? 1024.0 * 1024
                 : unit == "G" ? 1024.0 * 1024 * 1024
                 : unit == "T" ? 1024.0 * 1024 * 1024 * 1024
                               : -1;
  constexpr double kMaxBytes = 1024.0 * 1024 * 1024 * 1024 * 1024;
  if (scale < 0 || !std::isfinite(value) || std::signbit(value) || value * scale > kMaxBytes)
    return std::nullopt;
  return static_cast<std::uint64_t>(value * scale);
}

std::string human_size(std::uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace kbuild
