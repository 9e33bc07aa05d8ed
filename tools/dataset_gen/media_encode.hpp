// Encoding the generator's frames with FFmpeg's libraries: JPEG (mjpeg), PNG, and MP4 with
// H.264 (libx264) written to memory through a seekable custom AVIO, with a fixed keyframe
// interval so keyframe-only decode has real keyframes to find. Bit-exact flags and one
// encoder thread keep shards byte-identical for the same seed.
#pragma once

#include <cstdint>
#include <vector>

namespace msomni::gen {

enum class image_format { jpeg, png };

// libx264 prints a statistics block per clip at the default log level; keep errors only.
void quiet_ffmpeg_logs();

std::vector<uint8_t> encode_image(const std::vector<uint8_t>& rgb, int size, image_format fmt);

struct video_params {
  int size = 64;
  int fps = 10;
  int gop = 8;       // keyframe interval in frames
};

// frames: RGB24 images of size x size each.
std::vector<uint8_t> encode_mp4(const std::vector<std::vector<uint8_t>>& frames, const video_params& p);

}  // namespace msomni::gen
