// What a media member's bytes are, whatever its name says: JPEG (FF D8 FF), PNG (the 8-byte
// signature 89 50 4E 47 0D 0A 1A 0A) or MP4 ("ftyp" at offset 4). The decoder decodes by the
// bytes when they are another accepted format of the sample's modality than the name says
// (a PNG named .jpeg), and counts it as a mismatched name, not as a bad sample.
// Pure: looks at the first bytes (and, for a JPEG's size, its header segments) only.
#pragma once

#include "core/modality.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace msomni::data {

// "jpg", "png", "mp4", or "" when the bytes start like none of them.
std::string_view sniff_media_format(std::span<const uint8_t> bytes);

// The canonical format a member name's extension claims ("jpeg" -> "jpg"), or "".
std::string_view format_of_extension(std::string_view ext);

// True when `format` ("jpg", "png", "mp4") is a media format `kind` accepts.
bool accepted_format(modality kind, std::string_view format);

// The format to decode a sample's media by: the sniffed one when it is accepted for `kind`,
// else what the name says (then the decoder fails on bytes that are no accepted format).
struct media_choice {
  std::string_view format;
  bool mismatched_name = false;  // the bytes are another accepted format than the name says
};
media_choice choose_media_format(modality kind, std::string_view named, std::span<const uint8_t> bytes);

// An image's width and height as its header states them, read before any decoding: PNG's
// IHDR, or JPEG's first frame header (SOFn), found by walking the marker segments up to the
// scan. nullopt when `format` ("jpg", "png") is another or the header is cut or malformed
// (the decoder then judges the bytes).
struct pixel_size {
  uint32_t width = 0, height = 0;
  uint64_t pixels() const { return uint64_t(width) * height; }
};
std::optional<pixel_size> image_pixel_size(std::string_view format, std::span<const uint8_t> bytes);

}  // namespace msomni::data
