// msomni-gen-dataset: writes a seeded, captioned WebDataset (images, videos, text) for
// tests, examples and benchmarks, entirely offline.
#include "dataset_writer.hpp"
#include "media_encode.hpp"

#include "core/command_line.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

namespace {

namespace limits = msomni::config::limits;
using msomni::command_line::add_number;
using msomni::command_line::within;

// The generator's own limits; images and video frames are what the model may take.
constexpr limits::range<uint64_t> sample_count{0, uint64_t{1} << 40};
constexpr limits::range<uint64_t> per_shard_limit{1, uint64_t{1} << 30};
constexpr limits::range<int64_t> video_frames_limit{1, 10000};
constexpr limits::range<int64_t> fps_limit{1, 1000};

}  // namespace

int main(int argc, char** argv) {
  msomni::gen::dataset_options o;
  CLI::App app{"Writes a seeded, captioned WebDataset: DIR/images, DIR/videos and DIR/text as .tar shards. "
               "Defaults make ~100 samples; e.g. --images 200000 --videos 20000 --image-size 224 --video-size 224 "
               "gives a few GB.",
               "msomni-gen-dataset"};
  msomni::command_line::set_conventions(app);
  app.footer("Exit codes: 0 written, 2 a bad command line or the dataset could not be written.");
  app.add_option("--out", o.out_dir, "output directory")->type_name("DIR")->required();
  add_number(app, "--seed", o.seed, limits::range<uint64_t>{0, UINT64_MAX}, "seeds every sample");
  add_number(app, "--images", o.images, sample_count, "image samples");
  add_number(app, "--videos", o.videos, sample_count, "video samples");
  add_number(app, "--texts", o.texts, sample_count, "text samples");
  add_number(app, "--per-shard", o.samples_per_shard, per_shard_limit, "samples per .tar shard");
  app.add_option("--image-size", o.image_size, "image side in pixels (as model.image_size)")
      ->type_name("PX")
      ->transform(within(limits::model::image_size))
      ->capture_default_str();
  app.add_option("--video-size", o.video_size, "video frame side in pixels, even (as model.image_size)")
      ->type_name("PX")
      ->transform(within(limits::model::image_size))
      ->check([](const std::string& v) {
        return std::stoi(v) % 2 ? v + " is odd (H.264 frames need an even side)" : "";
      })
      ->capture_default_str();
  app.add_option("--video-length", o.video_length, "frames per clip")
      ->type_name("FRAMES")
      ->transform(within(video_frames_limit))
      ->capture_default_str();
  app.add_option("--gop", o.video_gop, "keyframe interval")
      ->type_name("FRAMES")
      ->transform(within(video_frames_limit))
      ->capture_default_str();
  add_number(app, "--fps", o.video_fps, fps_limit, "frames per second");
  app.add_option("--png-fraction", o.png_fraction, "share of images stored as PNG (the rest JPEG)")
      ->type_name("F")
      ->transform(within(0.0, 1.0))
      ->capture_default_str();
  if (const auto rc = msomni::command_line::parse(app, argc, argv)) return *rc;
  msomni::gen::quiet_ffmpeg_logs();
  try {
    const uint64_t total = o.images + o.videos + o.texts;
    const auto s = msomni::gen::write_dataset(o, [&](uint64_t done, uint64_t all) {
      if (done % 1000 == 0 || done == all) std::fprintf(stderr, "\r%llu/%llu samples", (unsigned long long)done, (unsigned long long)all);
    });
    if (total > 0) std::fprintf(stderr, "\n");
    std::printf("wrote %llu samples in %llu shards, %.1f MB, under %s\n", (unsigned long long)s.samples,
                (unsigned long long)s.shards, double(s.bytes) / 1e6, o.out_dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "msomni-gen-dataset: %s\n", e.what());
    return 2;
  }
}
