// Strings from device files with ${...} references, parsed when the file is
// loaded (so a typo fails at load time) and expanded when a device is resolved.
//
//   ${env:NAME}            required environment variable
//   ${env:NAME:-default}   NAME, or `default` (itself a template, nested at
//                          most 16 deep) if unset/empty
//   ${torch_root} ${torch_npu_root} ${cuda_home} ${python_include}
//   ${python_libdir} ${config_dir}
//   $$                     a literal $
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/environment.hpp"
#include "site/site.hpp"

namespace kbuild {

// A syntax error at byte `offset` of the template text.
struct TemplateSyntaxError : std::runtime_error {
  TemplateSyntaxError(const std::string& what, std::size_t offset)
      : std::runtime_error(what), offset(offset) {}
  std::size_t offset;
};

struct TemplateContext {
  const Environment& env;
  const Paths& paths;
  std::string config_dir;
};

struct Expansion {
  std::optional<std::string> value;  // set when everything resolved
  std::string missing_env;           // a required variable that is unset or empty
  std::string missing_root;          // a root variable that is unknown
  bool env_empty = false;            // missing_env is set, to the empty string
};

class TemplateString {
 public:
  static TemplateString parse(std::string_view text);  // throws TemplateSyntaxError
  static TemplateString literal(std::string text);

  Expansion expand(const TemplateContext& ctx) const;
  const std::string& text() const { return text_; }

 private:
  struct Segment {
    enum class Kind { literal, env, variable } kind;
    std::string text;  // the literal, the env var name, or the variable name
    std::shared_ptr<const TemplateString> fallback;  // for ${env:NAME:-fallback}
  };
  static TemplateString parse_part(std::string_view text, std::size_t& pos, int depth);

  std::string text_;
  std::vector<Segment> segments_;
};

}  // namespace kbuild
