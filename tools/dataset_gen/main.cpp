// msomni-gen-dataset: writes a seeded, captioned WebDataset (images, videos, text) for
// tests, examples and benchmarks, entirely offline.
#include "dataset_writer.hpp"
#include "media_encode.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: msomni-gen-dataset --out DIR [--seed N] [--images N] [--videos N] [--texts N]\n"
               "         [--per-shard N] [--image-size PX] [--video-size PX] [--video-length FRAMES]\n"
               "         [--gop FRAMES] [--fps N] [--png-fraction F]\n"
               "Writes DIR/images, DIR/videos and DIR/text as .tar shards. Defaults make ~100 samples;\n"
               "e.g. --images 200000 --videos 20000 --image-size 224 --video-size 224 gives a few GB.\n");
}

}  // namespace

int main(int argc, char** argv) {
  msomni::gen::dataset_options o;
  msomni::gen::quiet_ffmpeg_logs();
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        usage();
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
      const std::string v = argv[++i];
      if (a == "--out") o.out_dir = v;
      else if (a == "--seed") o.seed = std::stoull(v);
      else if (a == "--images") o.images = std::stoull(v);
      else if (a == "--videos") o.videos = std::stoull(v);
      else if (a == "--texts") o.texts = std::stoull(v);
      else if (a == "--per-shard") o.samples_per_shard = std::stoull(v);
      else if (a == "--image-size") o.image_size = std::stoi(v);
      else if (a == "--video-size") o.video_size = std::stoi(v);
      else if (a == "--video-length") o.video_length = std::stoi(v);
      else if (a == "--gop") o.video_gop = std::stoi(v);
      else if (a == "--fps") o.video_fps = std::stoi(v);
      else if (a == "--png-fraction") o.png_fraction = std::stod(v);
      else throw std::invalid_argument("unknown option " + a);
    }
    if (o.out_dir.empty()) throw std::invalid_argument("--out is required");
    if (o.samples_per_shard == 0 || o.image_size < 8 || o.video_size < 8 || o.video_size % 2 || o.video_length < 1 || o.video_gop < 1)
      throw std::invalid_argument("sizes: per-shard >= 1, image/video size >= 8 (video even), length and gop >= 1");
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
    usage();
    return 2;
  }
}
