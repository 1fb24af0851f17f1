// kbuild's main(): the command line with this process's environment.
#include "commands.hpp"

int main(int argc, char** argv) {
  const kbuild::Environment env = kbuild::Environment::from_process();
  return kbuild::cli::run_command(argc, argv, env);
}
