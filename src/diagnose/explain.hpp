// `kbuild explain`: the steps a build would run and every flag of its
// command with where it came from (layer, provider, device file:line), what
// finalize dropped and why, and why there is no torch layer when there is
// none. One Explanation, printed as text or as JSON (docs/diagnosing.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "build/compilation.hpp"
#include "kbuild/build_options.hpp"
#include "plan/plan.hpp"

namespace kbuild {

// One entry of the command: its words as they are on the command line.
struct ExplainedFlag {
  OptionList list = OptionList::cflags;
  std::vector<std::string> words;
  Origin origin;
  std::string dropped_because;  // only for a dropped entry: why finalize removed it
};

struct Explanation {
  BuildPlan plan;
  std::vector<Step> steps;           // what a cache miss would run
  std::vector<ExplainedFlag> flags;  // on the command line, in its lists' order
  std::vector<ExplainedFlag> dropped;
  // Why the command has none of torch's flags ("" when it has some).
  std::string no_torch_layer;
};

// What `compilation` (planned, as Driver::explain plans it) says of each
// flag: where it came from, and what was dropped.
Explanation explanation_of(const Compilation& compilation);

// The text `kbuild explain` prints: the steps, a blank line, a table of
// flags (flag, layer, provider, file:line), then why there is no torch
// layer and what was dropped, when so.
std::vector<std::string> explanation_lines(const Explanation& explanation);

// The same facts as JSON (schema "kbuild-explain/1", docs/diagnosing.md):
// the command's argv, the output, the steps, each flag and each dropped
// entry with its list, words, layer, provider, file and line.
nlohmann::ordered_json explanation_json(const Explanation& explanation);

}  // namespace kbuild
