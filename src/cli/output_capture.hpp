// Keeps a copy of what the CLI writes to std::cout and std::cerr while still
// writing it, so that a dry run can remember its exact output (plan cache).
#pragma once

#include <iostream>
#include <memory>
#include <streambuf>
#include <string>

namespace kbuild::cli {

class OutputCapture {
 public:
  OutputCapture();
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  std::string out() const;
  std::string err() const;

 private:
  class Tee;
  std::unique_ptr<Tee> out_, err_;
};

}  // namespace kbuild::cli
