// kbuild's main(): the program's text mapped at once (prefault.hpp), then
// the command line with this process's environment.
#include "commands.hpp"
#include "prefault.hpp"

int main(int argc, char** argv) {
  kbuild::cli::prefault_program_text();
  const kbuild::Environment env = kbuild::Environment::from_process();
  return kbuild::cli::run_command(argc, argv, env);
}
