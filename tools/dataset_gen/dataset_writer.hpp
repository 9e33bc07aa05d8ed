// Writes a captioned dataset as WebDataset shards: <out>/images/*.tar (NNNNNN.jpg|png +
// NNNNNN.txt), <out>/videos/*.tar (NNNNNN.mp4 + NNNNNN.txt) and <out>/text/*.tar
// (NNNNNN.txt). Every sample comes from its own RNG stream (seed, modality, index), so the
// output is identical for the same options and any sample can be regenerated alone.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace msomni::gen {

struct dataset_options {
  std::string out_dir;
  uint64_t seed = 1;
  uint64_t images = 64;
  uint64_t videos = 16;
  uint64_t texts = 32;
  uint64_t samples_per_shard = 32;
  int image_size = 64;
  int video_size = 64;
  int video_length = 16;     // frames per clip
  int video_fps = 10;
  int video_gop = 8;         // keyframe interval
  double png_fraction = 0.25;
};

struct dataset_summary {
  uint64_t shards = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;
};

// Writes the dataset; `progress(done, total)` is called after each sample when given.
dataset_summary write_dataset(const dataset_options& o,
                              const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace msomni::gen
