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

}  // namespace msomni::data
