
#include "util/digest.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "util/file_system.hpp"

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

namespace kbuild {

namespace {

// The secret key as libsodium holds it (seed followed by the public key).
std::string expand(const std::string& seed) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, reinterpret_cast<const unsigned char*>(seed.data()));
  std::string out(reinterpret_cast<const char*>(sk), sizeof sk);
  sodium_memzero(sk, sizeof sk);
  return out;
}

Result<std::string> from_hex(const std::string& hex, std::size_t bytes, const std::string& what) {
  std::string out(bytes, '\0');
  std::size_t got = 0;
  const char* end = nullptr;
  if (hex.size() != 2 * bytes ||
      sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), bytes, hex.data(), hex.size(),
                     nullptr, &got, &end) != 0 ||
      got != bytes)
    return Failure{what + " is not " + std::to_string(2 * bytes) +
                   " hex digits (make a key pair with kbuild cache keygen)"};
  return out;
}

}  // namespace

std::string to_hex(const std::string& bytes) {
  std::string out(2 * bytes.size() + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                 bytes.size());
  out.pop_back();
  return out;
}

SigningKeys generate_signing_keys() {
  init_sodium();
  std::string seed(crypto_sign_SEEDBYTES, '\0');
  randombytes_buf(seed.data(), seed.size());
  SigningKeys keys{to_hex(seed), to_hex(public_key_of(seed))};
  sodium_memzero(seed.data(), seed.size());
  return keys;
}

Result<std::string> decode_signing_key(const std::string& hex, const std::string& what) {
  return from_hex(hex, crypto_sign_SEEDBYTES, what);
}

Result<std::string> decode_verify_key(const std::string& hex, const std::string& what) {
  return from_hex(hex, crypto_sign_PUBLICKEYBYTES, what);
}

std::string public_key_of(const std::string& secret_key) {
  init_sodium();
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, reinterpret_cast<const unsigned char*>(secret_key.data()));
  sodium_memzero(sk, sizeof sk);
  return std::string(reinterpret_cast<const char*>(pk), sizeof pk);
}

std::string sign_message(const std::string& secret_key, const std::string& message) {
  init_sodium();
  std::string sk = expand(secret_key);
  unsigned char sig[crypto_sign_BYTES];
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(message.data()),
                       message.size(), reinterpret_cast<const unsigned char*>(sk.data()));
  sodium_memzero(sk.data(), sk.size());
  return std::string(reinterpret_cast<const char*>(sig), sizeof sig);
}

bool signature_valid(const std::string& public_key, const std::string& message,
                     const std::string& signature) {
  init_sodium();
  return signature.size() == crypto_sign_BYTES && public_key.size() == crypto_sign_PUBLICKEYBYTES &&
         crypto_sign_verify_detached(
             reinterpret_cast<const unsigned char*>(signature.data()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(),
             reinterpret_cast<const unsigned char*>(public_key.data())) == 0;
}

std::string content_hash(const std::string& bytes) {
  init_sodium();
  unsigned char out[32];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size(), nullptr, 0);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

static_assert(sizeof(crypto_generichash_state) <= 384);

ContentHash::ContentHash() {
  init_sodium();
  crypto_generichash_init(reinterpret_cast<crypto_generichash_state*>(state_), nullptr, 0, 32);
}

void ContentHash::add(std::string_view bytes) {
  crypto_generichash_update(reinterpret_cast<crypto_generichash_state*>(state_),
                            reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string ContentHash::raw() {
  unsigned char out[32];
  crypto_generichash_final(reinterpret_cast<crypto_generichash_state*>(state_), out, sizeof out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

std::string content_hash(std::initializer_list<std::string_view> parts) {
  ContentHash h;
  for (std::string_view part : parts) h.add(part);
  return h.raw();
}

}  // namespace kbuild

namespace kbuild {

std::string zstd_compress(std::string_view bytes, int level) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  (void)ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  // Large outputs (precompiled headers) in parallel: the writer just
  // compiled and is waiting on this; ignored by a zstd built without threads.
  if (bytes.size() > (8u << 20))
    (void)ZSTD_CCtx_setParameter(
        cctx, ZSTD_c_nbWorkers,
        static_cast<int>(std::min(4u, std::thread::hardware_concurrency())));
  const std::size_t n = ZSTD_compress2(cctx, out.data(), out.size(), bytes.data(), bytes.size());
  ZSTD_freeCCtx(cctx);
  // compressBound always suffices; an error here is zstd's own failure.
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

std::optional<std::size_t> zstd_content_size(std::string_view frame) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return std::nullopt;
  return static_cast<std::size_t>(size);
}

Status zstd_decompress_to(std::string_view frame, std::size_t max_size,
                          const std::function<Status(std::string_view)>& sink, bool& damaged) {
  damaged = true;
  std::optional<std::size_t> size = zstd_content_size(frame);
  if (!size) return Failure{"not a zstd frame with its size"};
  if (*size > max_size)
    return Failure{"holds " + std::to_string(*size) + " bytes, more than the " +
                   std::to_string(max_size) + " accepted"};
  if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size())
    return Failure{"is not one whole zstd frame"};
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::string buffer(std::min<std::size_t>(1u << 20, std::max<std::size_t>(*size, 1)), '\0');
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::size_t total = 0, left = 1;
  while (left != 0) {
    ZSTD_outBuffer out{buffer.data(), buffer.size(), 0};
    left = ZSTD_decompressStream(dctx.get(), &out, &in);
    if (ZSTD_isError(left))
      return Failure{std::string("is damaged (") + ZSTD_getErrorName(left) + ")"};
    total += out.pos;
    if (total > *size) return Failure{"holds more than its header says"};
    if (out.pos > 0) {
      damaged = false;
      if (Status s = sink(std::string_view(buffer.data(), out.pos)); !s) return s;
      damaged = true;
    }
    if (left != 0 && in.pos == in.size && out.pos == 0) return Failure{"is damaged (cut short)"};
  }
  if (total != *size) return Failure{"holds less than its header says"};
  damaged = false;
  return ok();
}

Result<std::string> zstd_decompress(std::string_view frame, std::size_t max_size) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
    return Failure{"not a zstd frame with its size"};
  if (size > max_size)
    return Failure{"holds " + std::to_string(size) + " bytes, more than the " +
                   std::to_string(max_size) + " accepted"};
  if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size())
    return Failure{"is not one whole zstd frame"};
  std::string out(static_cast<std::size_t>(size), '\0');
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != out.size())
    return Failure{std::string("is damaged (") +
                   (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short") + ")"};
  return out;
}

}  // namespace kbuild

namespace kbuild {

namespace {

// Everything that changes when the file's bytes do, as one file name.
std::string identity_name(const std::string& real, const struct stat& st) {
  const std::string id = "kbuild-program-1\n" + real + "\n" + std::to_string(st.st_dev) + " " +
                         std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
                         std::to_string(ns(st.st_mtim)) + " " + std::to_string(ns(st.st_ctim));
  return to_hex(content_hash(id));
}

// A remembered hash: content_hash's 64 hex digits or digest_hex's 40.
bool is_hash(const std::string& text) {
  if (text.size() != 64 && text.size() != 40) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

namespace {

// The hash of the file `path` resolves to, remembered in the cache's
// `subdir` under the file's identity when the file is `remember_from`
// bytes or more. Read a MiB at a time: `visit` sees each piece (a scan of
// the same bytes), and `stop` set ends the read early (nothing returned).
template <typename Hasher>
Result<FileLook> remembered_hash(const FileSystem& files, const std::string& path,
                                 const TrustedDir* cache, const char* subdir,
                                 std::size_t remember_from, const FileLookRequest& how) {
  errno = ENOENT;  // what a fake file system's missing path says
  const std::optional<std::string> resolved = files.real_path(path);
  if (!resolved) return Failure{path + ": " + std::strerror(errno)};
  const std::string& real = *resolved;
  Result<std::unique_ptr<OpenFile>> file = files.open(real);
  if (!file) return Failure{file.why()};
  FileLook look;
  struct stat& before = look.seen;
  if (std::optional<struct stat> st = (*file)->status())
    before = *st;
  else
    return Failure{path + ": " + std::strerror(errno)};
  const bool remember = cache && static_cast<std::size_t>(before.st_size) >= remember_from;
  const std::string name = remember ? identity_name(real, before) : std::string();
  std::optional<TrustedDir> dir;
  if (remember)
    if (Result<TrustedDir> known_dir = cache->sub(subdir, false))
      dir.emplace(std::move(*known_dir));
  if (dir)
    if (Result<std::string> known = dir->read(name, 256); known && is_hash(*known)) {
      look.digest = std::move(*known);
      return look;
    }
  Hasher hasher;
  const auto size = static_cast<std::size_t>(before.st_size);
  std::string piece(std::min(size, std::size_t{1} << 20), '\0');
  for (std::size_t have = 0; have < size;) {
    if (how.stop && how.stop->load(std::memory_order_relaxed)) return Failure{path + ": stopped"};
    const std::size_t want = std::min(piece.size(), size - have);
    Result<std::size_t> n = (*file)->read_at(piece.data(), want, have);
    if (!n) return Failure{n.why()};
    if (*n == 0) return Failure{path + " changed while it was read"};  // shrank: not what stat saw
    const std::string_view got(piece.data(), *n);
    hasher.add(got);
    if (how.visit) how.visit(got);
    have += got.size();
  }
  look.read = true;
  look.digest = hasher.hex();
  const std::optional<struct stat> after = (*file)->status();
  // Changed while read: the digest is of no one version.
  if (!after || !same_identity(before, *after)) return Failure{path + " changed while it was read"};
  if (remember && files.settled(*after)) {
    if (!dir)
      if (Result<TrustedDir> made = cache->sub(subdir, true)) dir.emplace(std::move(*made));
    if (dir) (void)dir->write_atomically(name, look.digest);  // a failure only costs the next build
  }
  return look;
}

// content_hash fed piece by piece, as hex.
struct ProgramHasher {
  ContentHash hash;
  void add(std::string_view bytes) { hash.add(bytes); }
  std::string hex() { return to_hex(hash.raw()); }
};

}  // namespace

bool same_identity(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         ns(a.st_mtim) == ns(b.st_mtim) && ns(a.st_ctim) == ns(b.st_ctim);
}

Result<std::string> program_hash(const FileSystem& files, const std::string& path,
                                 const TrustedDir* cache) {
  Result<FileLook> look = remembered_hash<ProgramHasher>(files, path, cache, "programs", 0, {});
  if (!look) return Failure{look.why()};
  return std::move(look->digest);
}

Result<FileLook> look_at_file(const FileSystem& files, const std::string& path,
                              const TrustedDir* cache, std::size_t remember_from,
                              const FileLookRequest& how) {
  return remembered_hash<Digest>(files, path, cache, "digests", remember_from, how);
}

Result<std::string> file_digest(const FileSystem& files, const std::string& path,
                                const TrustedDir* cache, std::size_t remember_from) {
  Result<FileLook> look = look_at_file(files, path, cache, remember_from, {});
  if (!look) return Failure{look.why()};
  return std::move(look->digest);
}

}  // namespace kbuild
