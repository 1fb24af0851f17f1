// `kbuild isa`: Inductor's valid ISA list and pick for this machine
// (cpu_vec_isa.py's valid_vec_isa_list() and pick_vec_isa()), from kbuild's
// probes, with what they were computed for: the probe's compiler, torch's
// headers (its root and version.py), the CPU (the flags the probes depend
// on) and ATEN_CPU_CAPABILITY. The bridge (kbuild_inductor) answers
// Inductor's checks from it. Machines with the same compiler, torch and CPU
// share the answers through the storage stack a build's settings make (the
// remote cache, KBUILD_REMOTE_CACHE, behind the local one, in its signed and
// read-only layers), under a key made of all of them: another CPU never
// gets them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "site/site.hpp"

namespace kbuild {

struct IsaAnswerRequest {
  SiteRequest site;
  std::string compiler = "g++";  // as configured (--cxx, CXX)
  std::string remote_cache;      // --remote-cache ("": KBUILD_REMOTE_CACHE, else none)
  bool remote_cache_readonly = false;
};

// Runs the probes whose answers are not cached (here or remotely). Throws
// Error(usage) when torch is not found or a setting is bad,
// Error(compiler_missing) when the compiler is not, Error(config) for a bad
// profile, Error(interrupted).
// What it states and reads (the compiler, torch's version.py, the caches)
// is `files`'.
IsaAnswer isa_answer(const IsaAnswerRequest& request, const Environment& env,
                     const FileSystem& files = system_file_system());

// The answer for a person: one line per fact.
std::vector<std::string> isa_answer_lines(const nlohmann::ordered_json& answer);

}  // namespace kbuild
