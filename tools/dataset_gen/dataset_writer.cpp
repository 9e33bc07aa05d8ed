// Dataset generation: scenes -> encoded media + captions -> ustar shards (see dataset_writer.hpp).
#include "dataset_writer.hpp"

#include "media_encode.hpp"
#include "scene.hpp"
#include "tar_format.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>

namespace msomni::gen {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string key_of(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06llu", static_cast<unsigned long long>(i));
  return buf;
}

// Rolls over to a new shard file every samples_per_shard samples.
class shard_sink {
 public:
  shard_sink(fs::path dir, uint64_t per_shard, dataset_summary& sum) : dir_(std::move(dir)), per_(per_shard), sum_(sum) {
    fs::create_directories(dir_);
  }
  ~shard_sink() { close(); }
  data::tar_writer& next_sample() {
    if (!w_ || n_ == per_) {
      close();
      w_ = std::make_unique<data::tar_writer>((dir_ / ("shard-" + key_of(shard_++) + ".tar")).string());
      n_ = 0;
      ++sum_.shards;
    }
    ++n_;
    ++sum_.samples;
    return *w_;
  }
  void close() {
    if (!w_) return;
    w_->finish();
    sum_.bytes += w_->bytes_written();
    w_.reset();
  }

 private:
  fs::path dir_;
  uint64_t per_;
  dataset_summary& sum_;
  std::unique_ptr<data::tar_writer> w_;
  uint64_t n_ = 0, shard_ = 0;
};

}  // namespace

dataset_summary write_dataset(const dataset_options& o, const std::function<void(uint64_t, uint64_t)>& progress) {
  dataset_summary sum;
  const fs::path root(o.out_dir);
  const uint64_t total = o.images + o.videos + o.texts;
  uint64_t done = 0;
  auto tick = [&] {
    ++done;
    if (progress) progress(done, total);
  };
  std::vector<uint8_t> rgb;
  if (o.images > 0) {
    shard_sink sink(root / "images", o.samples_per_shard, sum);
    for (uint64_t i = 0; i < o.images; ++i) {
      rng_stream rng = rng_stream::derive(o.seed, "gen.image", i);
      const scene s = random_scene(rng, false);
      render(s, o.image_size, 0, 1, rgb);
      const bool png = rng.uniform() < o.png_fraction;
      const auto media = encode_image(rgb, o.image_size, png ? image_format::png : image_format::jpeg);
      auto& w = sink.next_sample();
      w.add(key_of(i) + (png ? ".png" : ".jpg"), media);
      w.add(key_of(i) + ".txt", bytes_of(caption_of(s, false)));
      tick();
    }
  }
  if (o.videos > 0) {
    shard_sink sink(root / "videos", o.samples_per_shard, sum);
    const video_params vp{o.video_size, o.video_fps, o.video_gop};
    std::vector<std::vector<uint8_t>> frames(size_t(o.video_length));
    for (uint64_t i = 0; i < o.videos; ++i) {
      rng_stream rng = rng_stream::derive(o.seed, "gen.video", i);
      const scene s = random_scene(rng, true);
      for (int t = 0; t < o.video_length; ++t) render(s, o.video_size, t, o.video_length, frames[size_t(t)]);
      const auto media = encode_mp4(frames, vp);
      auto& w = sink.next_sample();
      w.add(key_of(i) + ".mp4", media);
      w.add(key_of(i) + ".txt", bytes_of(caption_of(s, true)));
      tick();
    }
  }
  if (o.texts > 0) {
    shard_sink sink(root / "text", o.samples_per_shard, sum);
    for (uint64_t i = 0; i < o.texts; ++i) {
      rng_stream rng = rng_stream::derive(o.seed, "gen.text", i);
      sink.next_sample().add(key_of(i) + ".txt", bytes_of(random_text(rng)));
      tick();
    }
  }
  return sum;
}

}  // namespace msomni::gen
