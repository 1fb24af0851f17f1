#include "in_process.hpp"

#include <iostream>
#include <sstream>

#include "cli/commands.hpp"

namespace kbuild_test {

namespace {

// Points a stream at a string for its lifetime.
class Capture {
 public:
  explicit Capture(std::ostream& stream) : stream_(stream), old_(stream.rdbuf(text_.rdbuf())) {}
  ~Capture() { stream_.rdbuf(old_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string text() const { return text_.str(); }

 private:
  std::ostream& stream_;
  std::ostringstream text_;
  std::streambuf* old_;
};

}  // namespace

RunResult run_kbuild_in_process(const std::vector<std::string>& args, const std::string& home,
                                std::map<std::string, std::string> set,
                                std::vector<std::string> unset) {
  make_hermetic(home, set, unset);
  const kbuild::Environment env(environment_with(set, unset));
  std::vector<std::string> words{"kbuild"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  RunResult result;
  Capture out(std::cout);
  Capture err(std::cerr);
  result.exit_code = kbuild::cli::run_command(static_cast<int>(words.size()), argv.data(), env);
  std::cout.flush();
  std::cerr.flush();
  result.out = out.text();
  result.err = err.text();
  return result;
}

}  // namespace kbuild_test
