// What a media member's bytes are, whatever its name says. msomni decodes, through FFmpeg:
//   images: JPEG, PNG, WebP, GIF (its first frame), BMP (TIFF is not: FFmpeg 5.1's decoder
//           refuses common TIFFs, its own encoder's included);
//   videos: the ISO base media family (MP4, MOV, M4V, fragmented MP4 included), the Matroska
//           family (MKV, WebM) and AVI, with whatever video codec FFmpeg's decoders take.
// A format is named by one short word per family: "jpg", "png", "webp", "gif", "bmp",
// "mp4" (MP4/MOV/M4V), "mkv" (MKV/WebM), "avi". A member keeps its real extension (.mov,
// .webm, .jpeg); the family is what the decoder opens. The decoder decodes by the bytes when
// they are another accepted format of the sample's modality than the name says (a PNG named
// .jpeg), and counts it as a mismatched name, not as a bad sample.
// Pure: looks at the first bytes (and, for an image's size, its header) only.
#pragma once

#include "core/modality.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace msomni::data {

// The format family the bytes start like, or "" when none msomni decodes.
std::string_view sniff_media_format(std::span<const uint8_t> bytes);

// The family a member name's extension claims, lower case without the dot ("jpeg" -> "jpg",
// "mov" -> "mp4", "webm" -> "mkv"), or "" for an extension msomni does not decode.
std::string_view format_of_extension(std::string_view ext);

// True when `format` (a family above) is a media format `kind` accepts.
bool accepted_format(modality kind, std::string_view format);

// The modality a media format family belongs to (text for "" and unknown ones).
modality kind_of_format(std::string_view format);

// What a person calls a family ("JPEG", "MP4/MOV", "Matroska/WebM"), for messages.
std::string_view format_label(std::string_view format);

// The extensions a modality's media members may have, for messages:
// ".jpg .jpeg .png .webp .gif .bmp" or ".mp4 .m4v .mov .mkv .webm .avi".
std::string_view accepted_extensions(modality kind);

// The format to decode a sample's media by: the sniffed one when it is accepted for `kind`,
// else what the name says (then the decoder fails on bytes that are no accepted format).
struct media_choice {
  std::string_view format;
  bool mismatched_name = false;  // the bytes are another accepted format than the name says
};
media_choice choose_media_format(modality kind, std::string_view named, std::span<const uint8_t> bytes);

// An image's width and height as its header states them, read before any decoding: PNG's
// IHDR, JPEG's first frame header (SOFn, found by walking the marker segments up to the scan),
// GIF's logical screen, BMP's info header, WebP's VP8/VP8L/VP8X header. nullopt for other
// formats or when the header is cut or malformed (the decoder's own pixel bound then
// judges the bytes).
struct pixel_size {
  uint32_t width = 0, height = 0;
  uint64_t pixels() const { return uint64_t(width) * height; }
};
std::optional<pixel_size> image_pixel_size(std::string_view format, std::span<const uint8_t> bytes);

}  // namespace msomni::data
