#include "diagnose/explain.hpp"

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

std::vector<ExplainedFlag> command_flags(const BuildPlan& plan) {
  std::vector<ExplainedFlag> flags;
  for (OptionList list : kAllOptionLists) {
    if (!on_command_line(plan.kind, list)) continue;
    for (const Entry& e : plan.options.entries(list)) {
      std::vector<std::string> words = render_entry(list, e);
      if (!words.empty()) flags.push_back(ExplainedFlag{list, std::move(words), e.origin, ""});
    }
  }
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

// "layer  provider  file:line", as the text's last column says it.
std::string where(const Origin& origin) {
  std::string s = std::string(layer_name(origin.layer)) + "  " + origin.provider;
  if (!origin.file.empty()) s += "  " + origin.file_line();
  return s;
}

std::string table_row(const std::string& words, const std::string& from) {
  return words + std::string(words.size() < 48 ? 48 - words.size() : 1, ' ') + from;
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
  lines.push_back(table_row("flag", "layer  provider  file:line"));
  for (const ExplainedFlag& f : explanation.flags)
    lines.push_back(table_row(shell_join(f.words), where(f.origin)));
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
