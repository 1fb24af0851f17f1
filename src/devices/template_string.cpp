#include "devices/template_string.hpp"

#include <array>

namespace kbuild {

constexpr int kMaxNestedDefaults = 16;

namespace {

constexpr std::array<std::string_view, 6> kVariables = {
    "torch_root", "torch_npu_root", "cuda_home", "python_include", "python_libdir", "config_dir"};

bool is_name_char(char c, bool first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (!first && c >= '0' && c <= '9');
}

std::optional<std::string> variable_value(const std::string& name, const TemplateContext& ctx) {
  if (name == "torch_root") return ctx.paths.torch_root;
  if (name == "torch_npu_root") return ctx.paths.torch_npu_root;
  if (name == "cuda_home") return ctx.paths.cuda_home;
  if (name == "python_include") return ctx.paths.python_include;
  if (name == "python_libdir") return ctx.paths.python_libdir;
  if (name == "config_dir") return ctx.config_dir;
  return std::nullopt;
}

}  // namespace

TemplateString TemplateString::parse(std::string_view text) {
  std::size_t pos = 0;
  TemplateString t = parse_part(text, pos, 0);
  t.text_ = std::string(text);
  return t;
}

TemplateString TemplateString::literal(std::string text) {
  TemplateString t;
  t.segments_.push_back({Segment::Kind::literal, text, nullptr});
  t.text_ = std::move(text);
  return t;
}

TemplateString TemplateString::parse_part(std::string_view text, std::size_t& pos, int depth) {
  const bool nested = depth > 0;
  TemplateString t;
  const std::size_t start = pos;
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) t.segments_.push_back({Segment::Kind::literal, literal, nullptr});
    literal.clear();
  };
  while (pos < text.size()) {
    char c = text[pos];
    if (nested && c == '}') break;
    if (c != '$') {
      literal += c;
      ++pos;
      continue;
    }
    if (pos + 1 < text.size() && text[pos + 1] == '$') {
      literal += '$';
      pos += 2;
      continue;
    }
    if (pos + 1 >= text.size() || text[pos + 1] != '{')
      throw TemplateSyntaxError("lone '$' (write $$ for a literal $, ${name} for a variable)", pos);
    const std::size_t open = pos;
    pos += 2;
    flush();
    if (text.substr(pos, 4) == "env:") {
      pos += 4;
      std::size_t name_start = pos;
      while (pos < text.size() && is_name_char(text[pos], pos == name_start)) ++pos;
      std::string name(text.substr(name_start, pos - name_start));
      if (name.empty())
        throw TemplateSyntaxError("'${env:' must be followed by a variable name", pos);
      Segment seg{Segment::Kind::env, name, nullptr};
      if (text.substr(pos, 2) == ":-") {
        pos += 2;
        // Bounded: parsing, expanding and freeing all recurse this deep.
        if (depth >= kMaxNestedDefaults)
          throw TemplateSyntaxError(
              "defaults nested more than " + std::to_string(kMaxNestedDefaults) + " deep", open);
        seg.fallback = std::make_shared<TemplateString>(parse_part(text, pos, depth + 1));
      }
      if (pos >= text.size() || text[pos] != '}')
        throw TemplateSyntaxError("unterminated '${env:" + name + "' (missing '}')", open);
      ++pos;
      t.segments_.push_back(std::move(seg));
      continue;
    }
    auto close = text.find('}', pos);
    if (close == std::string_view::npos)
      throw TemplateSyntaxError("unterminated '${' (missing '}')", open);
    std::string name(text.substr(pos, close - pos));
    bool known = false;
    for (std::string_view v : kVariables) known = known || v == name;
    if (!known) {
      std::string list;
      for (std::string_view v : kVariables) list += (list.empty() ? "" : ", ") + std::string(v);
      throw TemplateSyntaxError(
          "unknown variable '${" + name + "}' (known: " + list + ", env:NAME, env:NAME:-default)",
          open);
    }
    t.segments_.push_back({Segment::Kind::variable, name, nullptr});
    pos = close + 1;
  }
  flush();
  t.text_ = std::string(text.substr(start, pos - start));
  return t;
}

Expansion TemplateString::expand(const TemplateContext& ctx) const {
  std::string out;
  for (const Segment& seg : segments_) {
    switch (seg.kind) {
      case Segment::Kind::literal: out += seg.text; break;
      case Segment::Kind::variable: {
        auto value = variable_value(seg.text, ctx);
        if (!value) return Expansion{std::nullopt, "", seg.text};
        out += *value;
        break;
      }
      case Segment::Kind::env: {
        auto value = ctx.env.get_nonempty(seg.text);
        if (value) {
          out += *value;
        } else if (seg.fallback) {
          Expansion inner = seg.fallback->expand(ctx);
          if (!inner.value) return inner;
          out += *inner.value;
        } else {
          return Expansion{std::nullopt, seg.text, "", ctx.env.get(seg.text).has_value()};
        }
        break;
      }
    }
  }
  return Expansion{out, "", ""};
}

}  // namespace kbuild
