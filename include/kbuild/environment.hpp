#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

// The process environment as kbuild sees it: injectable for tests, and
// remembering every variable that was consulted (for reports and doctor).
namespace kbuild {

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}

  // A snapshot of this process's environment.
  static Environment from_process();

  // The value of NAME, or nullopt when unset. Records the lookup.
  std::optional<std::string> get(const std::string& name) const;
  // Like get(), but an empty value counts as unset (POSIX `${X:-d}` rules).
  std::optional<std::string> get_nonempty(const std::string& name) const;

  void set(const std::string& name, std::string value) { vars_[name] = std::move(value); }
  void unset(const std::string& name) { vars_.erase(name); }

  // All variables, as "NAME=value" (for a child process's environment).
  std::vector<std::string> entries() const;

  // Every variable looked up so far, with the value seen (nullopt = unset).
  const std::map<std::string, std::optional<std::string>>& consulted() const { return consulted_; }

 private:
  std::map<std::string, std::string> vars_;
  mutable std::map<std::string, std::optional<std::string>> consulted_;
};

}  // namespace kbuild
