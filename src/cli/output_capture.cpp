#include "output_capture.hpp"

namespace kbuild::cli {

// Passes every character on to the stream's own buffer and keeps a copy.
class OutputCapture::Tee : public std::streambuf {
 public:
  explicit Tee(std::ostream& stream) : stream_(stream), inner_(stream.rdbuf(this)) {}
  ~Tee() override { stream_.rdbuf(inner_); }
  const std::string& copy() const { return copy_; }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    copy_ += static_cast<char>(c);
    return inner_->sputc(static_cast<char>(c));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    copy_.append(s, static_cast<std::size_t>(n));
    return inner_->sputn(s, n);
  }
  int sync() override { return inner_->pubsync(); }

 private:
  std::ostream& stream_;
  std::streambuf* inner_;
  std::string copy_;
};

OutputCapture::OutputCapture()
    : out_(std::make_unique<Tee>(std::cout)), err_(std::make_unique<Tee>(std::cerr)) {}

OutputCapture::~OutputCapture() = default;

std::string OutputCapture::out() const {
  return out_->copy();
}
std::string OutputCapture::err() const {
  return err_->copy();
}

}  // namespace kbuild::cli
