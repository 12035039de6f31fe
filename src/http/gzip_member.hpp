#pragma once
// One gzip member (RFC 1952) made of two parts: a large text compressed once and shared by many
// responses, and a small per-response tail appended without compressing it.
//
//   shared:   gzip header, then the text as raw deflate blocks ending with a full flush (so the
//             stream is byte-aligned and nothing after it refers back into it; RFC 1951)
//   per tail: the tail as stored (uncompressed) deflate blocks, the last one final, then the
//             trailer: CRC-32 of text + tail (crc32_combine) and their length mod 2^32
//
// So a response costs no compression at all: the tail is copied and checksummed, and every
// decoder (Go's, so Prometheus', zlib's, browsers') sees one ordinary member.
//
// Pure; thread-safety: a gzip_prefix is immutable once made.

#include <cstdint>
#include <string>
#include <string_view>

namespace joules::exporter {

struct gzip_prefix {
  std::string bytes;       // header + deflate blocks of the text, not final
  std::uint32_t crc = 0;   // CRC-32 of the text
  std::uint64_t size = 0;  // bytes of the text
};

// Compresses `text` (zlib level 1 by default: fast, and metrics text compresses ~10x anyway).
gzip_prefix gzip_begin(std::string_view text, int level = 1);

// Appends to `out` what completes `prefix` into a member whose content is text + `tail`.
void gzip_end(const gzip_prefix& prefix, std::string_view tail, std::string& out);

// Bytes gzip_end() appends for a tail of `tail_size` bytes.
std::size_t gzip_end_size(std::size_t tail_size);

}  // namespace joules::exporter
