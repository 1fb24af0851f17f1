#include "kbuild/build_steps.hpp"

#include <filesystem>

#include "kbuild/error.hpp"
#include "util/shell.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// "dir/k.so" and 0, "src/k.cpp" -> "dir/k.so.0-k" (then ".o", ".d").
std::string derived_name(const std::string& output, std::size_t index, const std::string& source) {
  return output + "." + std::to_string(index) + "-" + fs::path(source).stem().string();
}

std::size_t index_of_output(const std::vector<std::string>& argv, const std::string& output) {
  for (std::size_t i = argv.size(); i-- > 1;)
    if (argv[i] == output && argv[i - 1] == "-o") return i;
  return argv.size() - 1;
}

// Puts the launcher before `argv`, resolving -march=native when asked.
Step launched(const Launcher& launcher, const std::vector<std::string>& argv,
              const std::vector<std::string>& native_flags) {
  Step s;
  s.argv = launcher.argv;
  s.compiler_index = s.argv.size();
  for (const std::string& word : argv) {
    if (word == "-march=native" && launcher.resolve_native && !launcher.argv.empty())
      s.argv.insert(s.argv.end(), native_flags.begin(), native_flags.end());
    else
      s.argv.push_back(word);
  }
  return s;
}

void list_inputs_in_argv(Step& s, const std::string& depfile) {
  s.argv.insert(s.argv.end(), {"-MD", "-MF", depfile});
  s.input_list = InputList::argv;
  s.input_list_index = s.argv.size() - 1;
  s.work_files.push_back(s.input_list_index);
}

}  // namespace

bool links_objects_only(const std::vector<std::string>& sources) {
  for (const std::string& s : sources) {
    std::string ext = fs::path(s).extension().string();
    if (ext != ".o" && ext != ".a" && ext != ".so") return false;
  }
  return true;
}

std::vector<Step> plan_steps(const BuildPlan& plan, const StepInput& in) {
  const Launcher& launcher = in.launcher;
  if (launcher.resolve_native && !launcher.argv.empty() && in.native_flags.empty())
    for (const std::string& w : plan.command.argv)
      if (w == "-march=native")
        throw Error(ErrorKind::compiler_missing, "cannot tell what -march=native means for " +
                                                     plan.command.argv[0] +
                                                     " (its -### output); drop --resolve-native");
  const bool objects_only = links_objects_only(in.sources);
  const bool record = in.record_inputs && !objects_only;
  std::vector<Step> steps;
  if (!launcher.split || !links(plan.kind) || objects_only) {
    // One step: the command itself, behind the launcher if there is one.
    Step s = launched(launcher, plan.command.argv, in.native_flags);
    s.output_index = s.compiler_index + plan.command.output_index;
    s.work_files.push_back(s.output_index);
    s.links = links(plan.kind);
    if (record && launcher.split)
      list_inputs_in_argv(s, plan.output + ".d");
    else if (record)
      s.input_list = InputList::environment;
    steps.push_back(std::move(s));
  } else {
    BuildOptions compile_options = plan.options;
    compile_options.remove(OptionList::cflags, "shared");
    std::vector<std::string> objects;
    for (std::size_t i = 0; i < in.sources.size(); ++i) {
      const std::string base = derived_name(plan.output, i, in.sources[i]);
      objects.push_back(base + ".o");
      Command c = assemble(compile_options, AssembleInput{plan.command.argv[0],
                                                          {in.sources[i]},
                                                          OutputKind::object,
                                                          objects.back(),
                                                          plan.include_pch});
      Step s = launched(launcher, c.argv, in.native_flags);
      s.output_index = index_of_output(s.argv, objects.back());
      s.work_files.push_back(s.output_index);
      s.source = in.sources[i];
      if (record) list_inputs_in_argv(s, base + ".d");
      steps.push_back(std::move(s));
    }
    Command link = assemble(plan.options,
                            AssembleInput{plan.command.argv[0], objects, OutputKind::shared_library,
                                          plan.output, std::nullopt});
    Step s;
    s.argv = link.argv;
    s.output_index = link.output_index;
    for (std::size_t i = 1; i < s.argv.size(); ++i)
      for (const std::string& o : objects)
        if (s.argv[i] == o) s.work_files.push_back(i);
    s.work_files.push_back(s.output_index);
    s.links = true;
    steps.push_back(std::move(s));
  }
  if (in.load_check) {
    Step check;
    check.kind = StepKind::load_check;
    check.comment = "load check: dlopen " + plan.output + " (RTLD_NOW) in kbuild-load-check";
    for (const std::string& sym : in.required_symbols) check.comment += ", needs symbol " + sym;
    steps.push_back(std::move(check));
  }
  return steps;
}

std::vector<std::string> step_lines(const std::vector<Step>& steps) {
  std::vector<std::string> lines;
  lines.reserve(steps.size());
  for (const Step& s : steps)
    lines.push_back(s.kind == StepKind::command ? shell_join(s.argv) : "# " + s.comment);
  return lines;
}

}  // namespace kbuild
