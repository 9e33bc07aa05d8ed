// Media format sniffing (see media_format.hpp).
#include "media_format.hpp"

#include <cstring>

namespace msomni::data {

std::string_view sniff_media_format(std::span<const uint8_t> b) {
  static constexpr uint8_t png[8] = {0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return "jpg";
  if (b.size() >= 8 && std::memcmp(b.data(), png, 8) == 0) return "png";
  if (b.size() >= 8 && std::memcmp(b.data() + 4, "ftyp", 4) == 0) return "mp4";
  return "";
}

std::string_view format_of_extension(std::string_view ext) {
  if (ext == "jpg" || ext == "jpeg") return "jpg";
  if (ext == "png") return "png";
  if (ext == "mp4") return "mp4";
  return "";
}

bool accepted_format(modality kind, std::string_view format) {
  switch (kind) {
    case modality::image: return format == "jpg" || format == "png";
    case modality::video: return format == "mp4";
    case modality::text: return false;
  }
  return false;
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

}  // namespace

std::optional<pixel_size> image_pixel_size(std::string_view format, std::span<const uint8_t> bytes) {
  if (format == "png") return png_size(bytes);
  if (format == "jpg" && bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) return jpeg_size(bytes);
  return std::nullopt;
}

}  // namespace msomni::data
