#include "util/digest.hpp"

#include <array>

namespace kbuild {

namespace {

constexpr std::size_t kBytes = 20;  // 160 bits, as long as the SHA-1 it replaced

}  // namespace

void init_sodium() {
  static const bool ready = sodium_init() >= 0;
  (void)ready;
}

Digest::Digest() {
  init_sodium();
  crypto_generichash_init(&state_, nullptr, 0, kBytes);
}

void Digest::add(const void* bytes, std::size_t size) {
  crypto_generichash_update(&state_, static_cast<const unsigned char*>(bytes), size);
}

std::string Digest::hex() {
  std::array<unsigned char, kBytes> out{};
  crypto_generichash_final(&state_, out.data(), out.size());
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (unsigned char c : out) text += {digits[c >> 4], digits[c & 15]};
  return text;
}

std::string digest_hex(std::string_view bytes) {
  Digest digest;
  digest.add(bytes);
  return digest.hex();
}

}  // namespace kbuild
