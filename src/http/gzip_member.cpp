#include "http/gzip_member.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace joules::exporter {
namespace {

constexpr std::size_t kMaxStored = 65535;  // bytes in one stored block (RFC 1951 §3.2.4)

void put_le32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((v >> (8 * i)) & 0xFFU);
}

}  // namespace

gzip_prefix gzip_begin(std::string_view text, int level) {
  gzip_prefix p;
  // Header: magic, deflate, no flags, no time, no extra flags, OS unknown (RFC 1952 §2.3).
  static constexpr std::array<unsigned char, 10> kHeader = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
  p.bytes.assign(kHeader.begin(), kHeader.end());
  z_stream z{};
  // Raw deflate (negative window bits): the gzip framing is written here, not by zlib.
  if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  const std::size_t at = p.bytes.size();
  p.bytes.resize(at + deflateBound(&z, static_cast<uLong>(text.size())) + 16);
  // zlib's interface takes non-const input; it only reads it.
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(p.bytes.data() + at);
  z.avail_out = static_cast<uInt>(p.bytes.size() - at);
  const int rc = deflate(&z, Z_FULL_FLUSH);
  const bool ok = rc == Z_OK && z.avail_in == 0 && z.avail_out > 0;
  p.bytes.resize(p.bytes.size() - z.avail_out);
  deflateEnd(&z);
  if (!ok) throw std::runtime_error("deflate failed");
  p.crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
  p.size = text.size();
  p.bytes.shrink_to_fit();
  return p;
}

std::size_t gzip_end_size(std::size_t tail_size) {
  const std::size_t blocks = std::max<std::size_t>(1, (tail_size + kMaxStored - 1) / kMaxStored);
  return blocks * 5 + tail_size + 8;
}

void gzip_end(const gzip_prefix& prefix, std::string_view tail, std::string& out) {
  out.reserve(out.size() + gzip_end_size(tail.size()));
  std::string_view rest = tail;
  do {
    const std::size_t n = std::min(rest.size(), kMaxStored);
    const bool last = n == rest.size();
    // A stored block: BFINAL, BTYPE 00, padding to the byte (the stream is byte-aligned after
    // the full flush and after every stored block), LEN and its one's complement, the bytes.
    out += static_cast<char>(last ? 1 : 0);
    out += static_cast<char>(n & 0xFFU);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(~n & 0xFFU);
    out += static_cast<char>((~n >> 8) & 0xFFU);
    out.append(rest.substr(0, n));
    rest.remove_prefix(n);
  } while (!rest.empty());
  const auto tail_crc =
      crc32(0, reinterpret_cast<const Bytef*>(tail.data()), static_cast<uInt>(tail.size()));
  const auto crc = crc32_combine(prefix.crc, tail_crc, static_cast<z_off_t>(tail.size()));
  put_le32(out, static_cast<std::uint32_t>(crc));
  put_le32(out, static_cast<std::uint32_t>((prefix.size + tail.size()) & 0xFFFFFFFFU));
}

}  // namespace joules::exporter
