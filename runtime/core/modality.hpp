// The three sample modalities the data pipeline and the model know.
#pragma once

#include <cstdint>

namespace msomni {

enum class modality : uint8_t { image = 0, video = 1, text = 2 };
inline constexpr int modality_count = 3;

inline const char* to_string(modality m) {
  switch (m) {
    case modality::image: return "image";
    case modality::video: return "video";
    case modality::text: return "text";
  }
  return "?";
}

}  // namespace msomni
