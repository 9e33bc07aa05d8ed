// Helpers for the data-pipeline tests: a small generated dataset (in a temp_dir of
// support/process_runner.hpp), and job configs pointing at it. Nothing is committed as data:
// every test renders its shards with the generator.
#pragma once

#include "config/job_config.hpp"
#include "data_pipeline.hpp"
#include "dataset_writer.hpp"
#include "media_encode.hpp"
#include "support/process_runner.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace msomni::testing {

inline gen::dataset_options tiny_dataset(const std::filesystem::path& out) {
  gen::quiet_ffmpeg_logs();
  gen::dataset_options o;
  o.out_dir = out.string();
  o.seed = 7;
  o.images = 40;
  o.videos = 12;
  o.texts = 24;
  o.samples_per_shard = 8;
  o.image_size = 32;
  o.video_size = 32;
  o.video_length = 16;
  o.video_gop = 8;
  return o;
}

// Rank `rank` of `world` with micro_batch 4 (tiny_job's) and grad_accum `grad_accum`.
inline data::order_slot slot(uint32_t rank, uint32_t world, int64_t grad_accum = 1) {
  return {rank, world, grad_accum, 4};
}

// A job reading <root>/images, videos and text with weights 2:1:1.
inline config::job_config tiny_job(const std::filesystem::path& root) {
  config::job_config c;
  c.training.micro_batch = 4;
  c.training.seed = 99;
  c.model.image_size = 16;
  c.model.patch_size = 8;
  c.model.video_frames = 2;
  c.model.max_seq_len = 96;
  c.io.prefetch_depth = 2;
  c.io.decode_workers = 2;
  c.data.sources = {{"images", (root / "images").string(), 2.0, modality::image},
                    {"videos", (root / "videos").string(), 1.0, modality::video},
                    {"text", (root / "text").string(), 1.0, modality::text}};
  return c;
}

}  // namespace msomni::testing
