// Compares two values of a parsed-file struct field by field, by position,
// without the codec's field lists: each struct's overload names its fields in
// a structured binding, so a field added to the struct stops the test's build
// until it is compared here too. Also checks that a test value sets every
// field: compared with a default-constructed one, every field must differ
// (every container non-empty, every optional and pointer set, every element
// in turn differing from a default one).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "devices/device_file.hpp"
#include "devices/profile.hpp"
#include "devices/template_string.hpp"

namespace kbuild_test {

class FieldWalk {
 public:
  enum class Want { equal, every_field_set };
  explicit FieldWalk(Want want) : want_(want) {}
  // The fields that did not compare as wanted, as paths ("plugin.releases[0].line").
  const std::vector<std::string>& failures() const { return failures_; }

  template <class T>
  void leaf(const T& a, const T& b, const std::string& where) {
    const bool equal = a == b;
    if (want_ == Want::equal ? !equal : equal) failures_.push_back(where);
  }
  void check(const kbuild::TemplateString& a, const kbuild::TemplateString& b,
             const std::string& where) {
    leaf(a.text(), b.text(), where);
  }
  void check(const std::string& a, const std::string& b, const std::string& where) {
    leaf(a, b, where);
  }
  void check(int a, int b, const std::string& where) { leaf(a, b, where); }
  void check(bool a, bool b, const std::string& where) { leaf(a, b, where); }
  void check(double a, double b, const std::string& where) { leaf(a, b, where); }
  void check(kbuild::RegistrationMode a, kbuild::RegistrationMode b, const std::string& where) {
    leaf(a, b, where);
  }
  void check(kbuild::OptionList a, kbuild::OptionList b, const std::string& where) {
    leaf(a, b, where);
  }

  template <class T>
  void check(const std::vector<T>& a, const std::vector<T>& b, const std::string& where) {
    if (!sizes(a.size(), b.size(), where)) return;
    for (std::size_t i = 0; i < a.size(); ++i)
      check(a[i], want_ == Want::equal ? b[i] : T{}, where + '[' + std::to_string(i) + ']');
  }
  template <class T, std::size_t N>
  void check(const std::array<T, N>& a, const std::array<T, N>& b, const std::string& where) {
    for (std::size_t i = 0; i < N; ++i) check(a[i], b[i], where + '[' + std::to_string(i) + ']');
  }
  template <class K, class V>
  void check(const std::map<K, V>& a, const std::map<K, V>& b, const std::string& where) {
    if (!sizes(a.size(), b.size(), where)) return;
    auto other = b.begin();
    for (const auto& [key, value] : a) {
      const std::string at = where + '[' + key + ']';
      if (want_ == Want::equal) {
        check(key, other->first, at + ".key");
        check(value, other->second, at);
        ++other;
      } else {
        check(key, K{}, at + ".key");
        check(value, V{}, at);
      }
    }
  }
  template <class T>
  void check(const std::optional<T>& a, const std::optional<T>& b, const std::string& where) {
    if (!present(a.has_value(), b.has_value(), where) || !a) return;
    check(*a, want_ == Want::equal ? *b : T{}, where);
  }
  template <class T>
  void check(const std::shared_ptr<const T>& a, const std::shared_ptr<const T>& b,
             const std::string& where) {
    if (!present(a != nullptr, b != nullptr, where) || !a) return;
    check(*a, want_ == Want::equal ? *b : T{}, where);
  }

  // Each struct: its fields by position, as a structured binding names them.
  void check(const kbuild::DeviceFileEntry& a, const kbuild::DeviceFileEntry& b,
             const std::string& where) {
    const auto& [a0, a1, a2] = a;
    const auto& [b0, b1, b2] = b;
    fields(where, std::tie(a0, a1, a2), std::tie(b0, b1, b2));
  }
  void check(const kbuild::ListBlock& a, const kbuild::ListBlock& b, const std::string& where) {
    const auto& [a0, a1, a2] = a;
    const auto& [b0, b1, b2] = b;
    fields(where, std::tie(a0, a1, a2), std::tie(b0, b1, b2));
  }
  void check(const kbuild::LayerDef& a, const kbuild::LayerDef& b, const std::string& where) {
    const auto& [a0, a1, a2, a3, a4] = a;
    const auto& [b0, b1, b2, b3, b4] = b;
    fields(where, std::tie(a0, a1, a2, a3, a4), std::tie(b0, b1, b2, b3, b4));
  }
  void check(const kbuild::PkgConfigPackage& a, const kbuild::PkgConfigPackage& b,
             const std::string& where) {
    const auto& [a0, a1, a2, a3] = a;
    const auto& [b0, b1, b2, b3] = b;
    fields(where, std::tie(a0, a1, a2, a3), std::tie(b0, b1, b2, b3));
  }
  void check(const kbuild::ExecSpec& a, const kbuild::ExecSpec& b, const std::string& where) {
    const auto& [a0, a1, a2] = a;
    const auto& [b0, b1, b2] = b;
    fields(where, std::tie(a0, a1, a2), std::tie(b0, b1, b2));
  }
  void check(const kbuild::PackageSpec& a, const kbuild::PackageSpec& b, const std::string& where) {
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7] = a;
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7] = b;
    fields(where, std::tie(a0, a1, a2, a3, a4, a5, a6, a7),
           std::tie(b0, b1, b2, b3, b4, b5, b6, b7));
  }
  void check(const kbuild::BaseEdit& a, const kbuild::BaseEdit& b, const std::string& where) {
    const auto& [a0, a1, a2, a3] = a;
    const auto& [b0, b1, b2, b3] = b;
    fields(where, std::tie(a0, a1, a2, a3), std::tie(b0, b1, b2, b3));
  }
  void check(const kbuild::ListOverride& a, const kbuild::ListOverride& b,
             const std::string& where) {
    const auto& [a0] = a;
    const auto& [b0] = b;
    fields(where, std::tie(a0), std::tie(b0));
  }
  void check(const kbuild::PluginBackend& a, const kbuild::PluginBackend& b,
             const std::string& where) {
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7] = a;
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7] = b;
    fields(where, std::tie(a0, a1, a2, a3, a4, a5, a6, a7),
           std::tie(b0, b1, b2, b3, b4, b5, b6, b7));
  }
  void check(const kbuild::PluginRelease& a, const kbuild::PluginRelease& b,
             const std::string& where) {
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12] = a;
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12] = b;
    fields(where, std::tie(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12),
           std::tie(b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12));
  }
  void check(const kbuild::PluginSpec& a, const kbuild::PluginSpec& b, const std::string& where) {
    const auto& [a0, a1, a2, a3, a4, a5, a6] = a;
    const auto& [b0, b1, b2, b3, b4, b5, b6] = b;
    fields(where, std::tie(a0, a1, a2, a3, a4, a5, a6), std::tie(b0, b1, b2, b3, b4, b5, b6));
  }
  void check(const kbuild::DeviceFile& a, const kbuild::DeviceFile& b, const std::string& where) {
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17] =
        a;
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16, b17] =
        b;
    fields(
        where,
        std::tie(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17),
        std::tie(b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16, b17));
  }
  void check(const kbuild::ProfileEntry& a, const kbuild::ProfileEntry& b,
             const std::string& where) {
    const auto& [a0, a1, a2, a3] = a;
    const auto& [b0, b1, b2, b3] = b;
    fields(where, std::tie(a0, a1, a2, a3), std::tie(b0, b1, b2, b3));
  }
  void check(const kbuild::ProfileIsa& a, const kbuild::ProfileIsa& b, const std::string& where) {
    const auto& [a0, a1, a2, a3] = a;
    const auto& [b0, b1, b2, b3] = b;
    fields(where, std::tie(a0, a1, a2, a3), std::tie(b0, b1, b2, b3));
  }
  void check(const kbuild::Profile& a, const kbuild::Profile& b, const std::string& where) {
    const auto& [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14] = a;
    const auto& [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14] = b;
    fields(where, std::tie(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14),
           std::tie(b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14));
  }

 private:
  template <class... A, class... B>
  void fields(const std::string& where, const std::tuple<A&...>& a, const std::tuple<B&...>& b) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (check(std::get<I>(a), std::get<I>(b), where + ".#" + std::to_string(I)), ...);
    }
    (std::index_sequence_for<A...>{});
  }
  bool sizes(std::size_t a, std::size_t b, const std::string& where) {
    if (want_ == Want::equal ? a == b : a > 0) return true;
    failures_.push_back(where + " (size)");
    return false;
  }
  bool present(bool a, bool b, const std::string& where) {
    if (want_ == Want::equal ? a == b : a) return true;
    failures_.push_back(where + " (presence)");
    return false;
  }

  Want want_;
  std::vector<std::string> failures_;
};

// The fields of `a` that differ from `b` (empty: equal field by field).
template <class T>
std::vector<std::string> differing_fields(const T& a, const T& b) {
  FieldWalk walk(FieldWalk::Want::equal);
  walk.check(a, b, "");
  return walk.failures();
}

// The fields of `value` left at their default (empty: every one set).
template <class T>
std::vector<std::string> default_fields(const T& value) {
  FieldWalk walk(FieldWalk::Want::every_field_set);
  walk.check(value, T{}, "");
  return walk.failures();
}

}  // namespace kbuild_test
