#include "diagnose/explain.hpp"

#include <algorithm>
#include <array>

#include "kbuild/error.hpp"
#include "plan/assemble.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

using ojson = nlohmann::ordered_json;

// The lists on the command line: a build that links nothing has no
// libraries, library dirs or ldflags on it.
bool on_command_line(OutputKind kind, OptionList list) {
  return links(kind) || (list != OptionList::ldflags && list != OptionList::libraries &&
                         list != OptionList::libraries_dirs);
}

// Where `words` first stand together in `argv` at places no earlier flag
// took (argv.size() when they do not); the places are taken.
std::size_t take_place(const std::vector<std::string>& argv, const std::vector<std::string>& words,
                       std::vector<bool>& taken) {
  for (std::size_t at = 0; at + words.size() <= argv.size(); ++at) {
    bool fits = true;
    for (std::size_t i = 0; fits && i < words.size(); ++i)
      fits = !taken[at + i] && argv[at + i] == words[i];
    if (!fits) continue;
    for (std::size_t i = 0; i < words.size(); ++i) taken[at + i] = true;
    return at;
  }
  return argv.size();
}

// Each entry on the command line, in the command's order (Inductor puts
// the lists in its own order, not the lists' one).
std::vector<ExplainedFlag> command_flags(const BuildPlan& plan) {
  std::vector<std::pair<std::size_t, ExplainedFlag>> placed;
  std::vector<bool> taken(plan.command.argv.size(), false);
  for (OptionList list : kAllOptionLists) {
    if (!on_command_line(plan.kind, list)) continue;
    for (const Entry& e : plan.options.entries(list)) {
      std::vector<std::string> words = render_entry(list, e);
      if (words.empty()) continue;
      const std::size_t at = take_place(plan.command.argv, words, taken);
      placed.emplace_back(at, ExplainedFlag{list, std::move(words), e.origin, ""});
    }
  }
  std::stable_sort(placed.begin(), placed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ExplainedFlag> flags;
  flags.reserve(placed.size());
  for (auto& [at, flag] : placed) flags.push_back(std::move(flag));
  return flags;
}

std::vector<ExplainedFlag> dropped_flags(const BuildPlan& plan) {
  std::vector<ExplainedFlag> dropped;
  for (const DroppedEntry& d : plan.options.dropped())
    dropped.push_back(
        ExplainedFlag{d.list, render_entry(d.list, d.entry), d.entry.origin, d.reason});
  return dropped;
}

std::string no_torch_layer(const std::vector<ExplainedFlag>& flags, const BuildRequest& request,
                           const Session& session) {
  for (const ExplainedFlag& f : flags)
    if (f.origin.layer == Layer::torch) return "";
  if (!request.use_torch) return "--no-torch was given";
  if (!session.site.paths.torch_root)
    return "torch was not found (give --torch-root DIR, or run with the Python that has torch)";
  return "the profile adds no torch flags for this build";
}

// "layer  provider  file:line", as a dropped entry's line says it.
std::string where(const Origin& origin) {
  std::string s = std::string(layer_name(origin.layer)) + "  " + origin.provider;
  if (!origin.file.empty()) s += "  " + origin.file_line();
  return s;
}

// The table's rows: flag, layer, provider, file:line, each column as wide
// as its widest cell and two spaces apart; the header first.
std::vector<std::string> flag_table(const std::vector<ExplainedFlag>& flags) {
  std::vector<std::array<std::string, 4>> cells{{"flag", "layer", "provider", "file:line"}};
  for (const ExplainedFlag& f : flags)
    cells.push_back({shell_join(f.words), std::string(layer_name(f.origin.layer)),
                     f.origin.provider, f.origin.file.empty() ? "" : f.origin.file_line()});
  std::array<std::size_t, 3> width{};
  for (const auto& row : cells)
    for (std::size_t i = 0; i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::vector<std::string> lines;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < width.size(); ++i)
      line += row[i] + std::string(width[i] - row[i].size() + 2, ' ');
    line += row[3];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

ojson flag_json(const ExplainedFlag& flag) {
  ojson out{{"list", list_name(flag.list)},
            {"words", flag.words},
            {"layer", layer_name(flag.origin.layer)},
            {"provider", flag.origin.provider},
            {"file", flag.origin.file.empty() ? ojson() : ojson(flag.origin.file)},
            {"line", flag.origin.file.empty() ? ojson() : ojson(flag.origin.line)}};
  if (!flag.dropped_because.empty()) out["reason"] = flag.dropped_because;
  return out;
}

ojson step_json(const Step& step) {
  if (step.kind == StepKind::load_check) return {{"kind", "load_check"}, {"comment", step.comment}};
  return {{"kind", "command"}, {"argv", step.argv}};
}

}  // namespace

Explanation explanation_of(const Compilation& compilation) {
  Explanation out{*compilation.plan, compilation.steps, {}, {}, ""};
  out.flags = command_flags(out.plan);
  out.dropped = dropped_flags(out.plan);
  out.no_torch_layer = no_torch_layer(out.flags, *compilation.request, *compilation.session);
  return out;
}

std::vector<std::string> explanation_lines(const Explanation& explanation) {
  std::vector<std::string> lines = step_lines(explanation.steps);
  lines.emplace_back();
  for (std::string& row : flag_table(explanation.flags)) lines.push_back(std::move(row));
  if (!explanation.no_torch_layer.empty()) {
    lines.emplace_back();
    lines.push_back("no torch layer: " + explanation.no_torch_layer);
  }
  if (!explanation.dropped.empty()) {
    lines.emplace_back();
    lines.emplace_back("dropped:");
  }
  for (const ExplainedFlag& d : explanation.dropped) {
    const std::string words = shell_join(d.words);
    lines.push_back("  " + (words.empty() ? "''" : words) + "    " + where(d.origin) + "  (" +
                    d.dropped_because + ")");
  }
  return lines;
}

ojson explanation_json(const Explanation& explanation) {
  ojson steps = ojson::array(), flags = ojson::array(), dropped = ojson::array();
  for (const Step& s : explanation.steps) steps.push_back(step_json(s));
  for (const ExplainedFlag& f : explanation.flags) flags.push_back(flag_json(f));
  for (const ExplainedFlag& d : explanation.dropped) dropped.push_back(flag_json(d));
  const std::string& no_torch = explanation.no_torch_layer;
  return ojson{{"schema", "kbuild-explain/1"},
               {"argv", explanation.plan.command.argv},
               {"output", explanation.plan.output},
               {"steps", steps},
               {"flags", flags},
               {"dropped", dropped},
               {"torch_layer", no_torch.empty()},
               {"no_torch_layer", no_torch.empty() ? ojson() : ojson(no_torch)},
               {"notes", explanation.plan.notes}};
}

}  // namespace kbuild
