#include "kbuild/environment.hpp"

#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <string_view>

namespace kbuild {

Environment Environment::from_process() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::get(const std::string& name) const {
  auto it = vars_.find(name);
  std::optional<std::string> value;
  if (it != vars_.end()) value = it->second;
  consulted_[name] = value;
  return value;
}

std::vector<std::string> Environment::entries() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : vars_) out.push_back(name + "=" + value);
  return out;
}

std::optional<std::string> Environment::get_nonempty(const std::string& name) const {
  auto value = get(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

}  // namespace kbuild
