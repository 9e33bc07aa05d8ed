// Media format sniffing (see media_format.hpp).
#include "media_format.hpp"

#include <climits>
#include <cstring>

namespace msomni::data {

namespace {

bool at(std::span<const uint8_t> b, size_t offset, std::string_view text) {
  return b.size() >= offset + text.size() && std::memcmp(b.data() + offset, text.data(), text.size()) == 0;
}

// The EBML header's DocType names the Matroska flavour; both open with the Matroska demuxer.
bool ebml(std::span<const uint8_t> b) { return b.size() >= 4 && b[0] == 0x1A && b[1] == 0x45 && b[2] == 0xDF && b[3] == 0xA3; }

// A QuickTime file may start with another top-level atom than ftyp.
bool quicktime_atom(std::span<const uint8_t> b) {
  for (std::string_view atom : {"moov", "mdat", "wide", "free", "skip", "pnot"})
    if (at(b, 4, atom)) return true;
  return false;
}

// BMP: "BM", then a DIB header whose size is one of the known versions.
bool bitmap(std::span<const uint8_t> b) {
  if (b.size() < 26 || !at(b, 0, "BM")) return false;
  const uint32_t dib = uint32_t(b[14]) | uint32_t(b[15]) << 8 | uint32_t(b[16]) << 16 | uint32_t(b[17]) << 24;
  return dib == 12 || dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 || dib == 124;
}

}  // namespace

std::string_view sniff_media_format(std::span<const uint8_t> b) {
  static constexpr uint8_t png[8] = {0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return "jpg";
  if (b.size() >= 8 && std::memcmp(b.data(), png, 8) == 0) return "png";
  if (at(b, 0, "RIFF") && at(b, 8, "WEBP")) return "webp";
  if (at(b, 0, "GIF87a") || at(b, 0, "GIF89a")) return "gif";
  if (bitmap(b)) return "bmp";
  if (at(b, 4, "ftyp") || quicktime_atom(b)) return "mp4";
  if (ebml(b)) return "mkv";
  if (at(b, 0, "RIFF") && at(b, 8, "AVI ")) return "avi";
  return "";
}

std::string_view format_of_extension(std::string_view ext) {
  if (ext == "jpg" || ext == "jpeg") return "jpg";
  if (ext == "png" || ext == "webp" || ext == "gif" || ext == "bmp" || ext == "avi") return ext;
  if (ext == "mp4" || ext == "m4v" || ext == "mov") return "mp4";
  if (ext == "mkv" || ext == "webm") return "mkv";
  return "";
}

modality kind_of_format(std::string_view f) {
  if (f == "jpg" || f == "png" || f == "webp" || f == "gif" || f == "bmp") return modality::image;
  if (f == "mp4" || f == "mkv" || f == "avi") return modality::video;
  return modality::text;
}

bool accepted_format(modality kind, std::string_view format) {
  return kind != modality::text && !format.empty() && kind_of_format(format) == kind;
}

std::string_view format_label(std::string_view f) {
  if (f == "jpg") return "JPEG";
  if (f == "png") return "PNG";
  if (f == "webp") return "WebP";
  if (f == "gif") return "GIF";
  if (f == "bmp") return "BMP";
  if (f == "mp4") return "MP4/MOV";
  if (f == "mkv") return "Matroska/WebM";
  if (f == "avi") return "AVI";
  return "unknown";
}

std::string_view accepted_extensions(modality kind) {
  switch (kind) {
    case modality::image: return ".jpg .jpeg .png .webp .gif .bmp";
    case modality::video: return ".mp4 .m4v .mov .mkv .webm .avi";
    case modality::text: return "none (a .txt caption only)";
  }
  return "";
}

media_choice choose_media_format(modality kind, std::string_view named, std::span<const uint8_t> bytes) {
  const std::string_view canonical = format_of_extension(named);
  const std::string_view sniffed = sniff_media_format(bytes);
  if (accepted_format(kind, sniffed) && sniffed != canonical) return {sniffed, true};
  return {canonical, false};
}

namespace {

uint32_t big_endian(std::span<const uint8_t> b, size_t at, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v = (v << 8) | b[at + i];
  return v;
}

std::optional<pixel_size> png_size(std::span<const uint8_t> b) {
  // Signature (8), then the IHDR chunk: length (4), "IHDR", width (4), height (4).
  if (b.size() < 24 || std::memcmp(b.data() + 12, "IHDR", 4) != 0) return std::nullopt;
  return pixel_size{big_endian(b, 16, 4), big_endian(b, 20, 4)};
}

std::optional<pixel_size> jpeg_size(std::span<const uint8_t> b) {
  size_t at = 2;  // after SOI
  while (at + 4 <= b.size()) {
    if (b[at] != 0xFF) return std::nullopt;
    const uint8_t marker = b[at + 1];
    if (marker == 0xFF) {  // fill byte before a marker
      ++at;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // no length of their own
      at += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // end, or a scan before any frame header
    const size_t length = big_endian(b, at + 2, 2);
    if (length < 2) return std::nullopt;
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC): precision (1), height (2), width (2).
    const bool frame_header = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame_header) {
      if (length < 7 || at + 9 > b.size()) return std::nullopt;
      return pixel_size{big_endian(b, at + 7, 2), big_endian(b, at + 5, 2)};
    }
    at += 2 + length;
  }
  return std::nullopt;
}

uint32_t little_endian(std::span<const uint8_t> b, size_t at, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = (v << 8) | b[at + i];
  return v;
}

// The logical screen: width (2, LE) and height (2, LE) after the 6-byte signature.
std::optional<pixel_size> gif_size(std::span<const uint8_t> b) {
  if (b.size() < 10) return std::nullopt;
  return pixel_size{little_endian(b, 6, 2), little_endian(b, 8, 2)};
}

// BITMAPCOREHEADER (12 bytes) has 16-bit sizes; the later headers 32-bit, the height signed
// (negative: top-down rows).
std::optional<pixel_size> bmp_size(std::span<const uint8_t> b) {
  const uint32_t dib = little_endian(b, 14, 4);
  if (dib == 12) return b.size() < 22 ? std::nullopt : std::optional(pixel_size{little_endian(b, 18, 2), little_endian(b, 20, 2)});
  if (b.size() < 26) return std::nullopt;
  const auto height = int32_t(little_endian(b, 22, 4));
  const auto width = int32_t(little_endian(b, 18, 4));
  if (width < 0 || height == INT32_MIN) return std::nullopt;
  return pixel_size{uint32_t(width), uint32_t(height < 0 ? -height : height)};
}

// RIFF(4) size(4) WEBP(4), then the first chunk: "VP8 " (lossy: frame tag, start code
// 9D 01 2A, 14-bit sizes), "VP8L" (lossless: 0x2F, then 14-bit width-1 and height-1 packed),
// or "VP8X" (extended: 24-bit canvas width-1 and height-1).
std::optional<pixel_size> webp_size(std::span<const uint8_t> b) {
  if (b.size() >= 30 && at(b, 12, "VP8 ") && b[23] == 0x9D && b[24] == 0x01 && b[25] == 0x2A)
    return pixel_size{little_endian(b, 26, 2) & 0x3FFF, little_endian(b, 28, 2) & 0x3FFF};
  if (b.size() >= 25 && at(b, 12, "VP8L") && b[20] == 0x2F) {
    const uint32_t bits = little_endian(b, 21, 4);
    return pixel_size{(bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1};
  }
  if (b.size() >= 30 && at(b, 12, "VP8X")) return pixel_size{little_endian(b, 24, 3) + 1, little_endian(b, 27, 3) + 1};
  return std::nullopt;
}

}  // namespace

std::optional<pixel_size> image_pixel_size(std::string_view format, std::span<const uint8_t> bytes) {
  if (format == "png") return png_size(bytes);
  if (format == "jpg" && bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) return jpeg_size(bytes);
  if (format == "gif" && sniff_media_format(bytes) == "gif") return gif_size(bytes);
  if (format == "bmp" && sniff_media_format(bytes) == "bmp") return bmp_size(bytes);
  if (format == "webp" && sniff_media_format(bytes) == "webp") return webp_size(bytes);
  return std::nullopt;
}

}  // namespace msomni::data
