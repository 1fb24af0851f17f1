#include "util/compress.hpp"

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <thread>

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
