// The decode stage's work on single samples: images and videos decode to the model's size,
// keyframe-only decode picks real keyframes, tokens are bytes with BOS/EOS, packing places
// patches and tokens where the model expects them.
#include "media_decoder.hpp"
#include "media_encode.hpp"
#include "scene.hpp"
#include "tensorizer.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace msomni;

namespace {

std::vector<std::vector<uint8_t>> moving_frames(int n, int size) {
  gen::scene s;
  s.colour = 0;  // red
  s.motion = 1;  // moving right
  s.cell_x = 0;
  auto frames = std::vector<std::vector<uint8_t>>(size_t(n));
  for (int t = 0; t < n; ++t) gen::render(s, size, t, n, frames[size_t(t)]);
  return frames;
}

data::raw_sample raw_of(modality kind, std::vector<uint8_t> media, std::string ext) {
  data::raw_sample r;
  r.key = "test/0";
  r.kind = kind;
  r.media = std::move(media);
  r.media_ext = std::move(ext);
  r.caption = "a red circle";
  return r;
}

// Mean red-minus-blue of the left and right halves of a frame: where the red shape is.
double red_balance(const uint8_t* rgb, int size, bool right) {
  double sum = 0;
  for (int y = 0; y < size; ++y)
    for (int x = right ? size / 2 : 0; x < (right ? size : size / 2); ++x) sum += double(rgb[(y * size + x) * 3]);
  return sum;
}

}  // namespace

TEST_CASE("a video decodes to video_frames sampled frames and keyframe-only to keyframes") {
  gen::quiet_ffmpeg_logs();
  const auto mp4 = gen::encode_mp4(moving_frames(16, 32), {32, 10, 8});
  data::media_decoder dec({16, 2, 64});
  const auto full = dec.decode(raw_of(modality::video, mp4, "mp4"), false);
  REQUIRE_MESSAGE(!full.bad, std::string(data::to_string(full.reason)));
  CHECK(full.frames == 2);
  CHECK(full.unique_frames == 2);
  CHECK_FALSE(full.downgraded);
  REQUIRE(full.pixels.size() == 2u * 16 * 16 * 3);
  // Frame 4 has the shape on the left, frame 12 on the right.
  CHECK(red_balance(full.pixels.data(), 16, false) > red_balance(full.pixels.data(), 16, true));
  CHECK(red_balance(full.pixels.data() + 768, 16, true) > red_balance(full.pixels.data() + 768, 16, false));

  const auto key = dec.decode(raw_of(modality::video, mp4, "mp4"), true);
  REQUIRE_MESSAGE(!key.bad, std::string(data::to_string(key.reason)));
  CHECK(key.downgraded);
  CHECK(key.frames == 2);
  CHECK(key.unique_frames == 2);  // slots 4 and 12 take keyframes 0 and 8
  CHECK(key.pixels != full.pixels);
}

TEST_CASE("JPEG and PNG decode and resize and tokens are bytes between BOS and EOS") {
  std::vector<uint8_t> rgb;
  gen::scene s;
  gen::render(s, 48, 0, 1, rgb);
  data::media_decoder dec({16, 2, 8});
  for (auto fmt : {gen::image_format::jpeg, gen::image_format::png}) {
    const auto out = dec.decode(raw_of(modality::image, gen::encode_image(rgb, 48, fmt), fmt == gen::image_format::png ? "png" : "jpg"), false);
    REQUIRE(!out.bad);
    CHECK(out.pixels.size() == 16u * 16 * 3);
    CHECK(out.tokens == std::vector<int32_t>{data::token_bos, 'a', ' ', 'r', 'e', 'd', ' ', data::token_eos});
  }
  CHECK(data::tokenize_bytes("hi", 64) == std::vector<int32_t>{data::token_bos, 'h', 'i', data::token_eos});
}

TEST_CASE("packing puts patches and masks and padding where the model expects them") {
  data::batch_shape shape{2, 16, 8, 2, 40};
  REQUIRE(shape.max_patches() == 8);
  REQUIRE(shape.max_tokens() == 32);
  data::decoded_sample img, txt;
  img.kind = modality::image;
  img.frames = img.unique_frames = 1;
  img.pixels.assign(16 * 16 * 3, 255);
  img.tokens = {data::token_bos, 'x', data::token_eos};
  txt.kind = modality::text;
  txt.tokens = {data::token_bos, data::token_eos};
  const auto b = data::pack_micro_batch(shape, {img, txt});
  CHECK(b.patches.size() == 2u * 8 * 192);
  CHECK(b.patches[0] == doctest::Approx(1.0f));
  CHECK(std::count(b.patch_mask.begin(), b.patch_mask.begin() + 8, 1) == 4);  // one frame of 4 patches
  CHECK(std::count(b.patch_mask.begin() + 8, b.patch_mask.end(), 1) == 0);
  CHECK(b.tokens[1] == 'x');
  CHECK(b.tokens[3] == data::token_pad);
  CHECK(std::count(b.token_mask.begin() + 32, b.token_mask.end(), 1) == 2);
  CHECK_THROWS_AS(data::pack_micro_batch(shape, {img}), std::invalid_argument);
}

// Patch sizes 2, 4, 8 and 16 give runs of 6, 12, 24 and 48 bytes: the vector loops' bodies
// and tails both run, with streaming stores (runs of a multiple of 4 floats) and without.
TEST_CASE("packing scales every byte to x * 2/255 - 1 in patch order and a recycled batch packs like a fresh one") {
  for (const int64_t patch : {int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}}) {
    CAPTURE(patch);
    const data::batch_shape shape{3, 32, patch, 2, 16 + 2 * (32 / patch) * (32 / patch)};
    const int64_t S = shape.image_size, D = shape.patch_dim(), P = shape.max_patches(), grid = S / patch;
    auto image = [&](uint8_t seed, uint32_t frames) {
      data::decoded_sample x;
      x.kind = frames > 1 ? modality::video : modality::image;
      x.frames = x.unique_frames = frames;
      x.pixels.resize(size_t(frames * S * S * 3));
      for (size_t i = 0; i < x.pixels.size(); ++i) x.pixels[i] = uint8_t(i * 7 + seed);
      x.tokens = {data::token_bos, 'a', data::token_eos};
      return x;
    };
    data::decoded_sample txt;
    txt.kind = modality::text;
    txt.tokens = {data::token_bos, 'b', data::token_eos};
    const std::vector<data::decoded_sample> first{image(1, 2), image(2, 1), txt}, second{txt, image(3, 1), image(4, 2)};
    const auto fresh = data::pack_micro_batch(shape, first);
    // Element (slot 0, frame f, patch (py, px), row dy, byte k) against the scalar formula.
    bool all_match = true;
    for (int64_t f = 0; f < 2; ++f)
      for (int64_t q = 0; q < grid * grid; ++q)
        for (int64_t e = 0; e < D; ++e) {
          const int64_t py = q / grid, px = q % grid, dy = e / (patch * 3), k = e % (patch * 3);
          const uint8_t byte = first[0].pixels[size_t(f * S * S * 3 + ((py * patch + dy) * S + px * patch) * 3 + k)];
          all_match = all_match && fresh.patches[size_t((f * grid * grid + q) * D + e)] == float(byte) * (2.0f / 255.0f) - 1.0f;
        }
    CHECK(all_match);
    CHECK(std::all_of(fresh.patches.begin() + 2 * P * D, fresh.patches.end(), [](float v) { return v == 0.0f; }));
    // The same buffers packed again with other samples: padding where patches were is zero again.
    data::micro_batch reused = fresh;
    data::pack_micro_batch_into(shape, second, reused);
    CHECK(reused == data::pack_micro_batch(shape, second));
    data::pack_micro_batch_into(shape, first, reused);
    CHECK(reused == fresh);
    // Slot by slot in any order (the actor pipeline packs each sample as its slot is filled):
    // the same bytes, into a recycled batch and into an empty one.
    data::micro_batch empty;
    for (data::micro_batch* out : {&reused, &empty}) {
      data::pack_begin(shape, *out);
      for (const uint32_t i : {2u, 0u, 1u}) data::pack_slot(shape, i, second[i], *out);
      CHECK(*out == data::pack_micro_batch(shape, second));
    }
    CHECK_THROWS_AS(data::pack_slot(shape, 3, second[0], reused), std::invalid_argument);
  }
}

TEST_CASE("decoding does not depend on what the decoder decoded before") {
  gen::quiet_ffmpeg_logs();
  std::vector<data::raw_sample> samples;
  for (int i = 0; i < 6; ++i) {
    std::vector<uint8_t> rgb;
    rng_stream rng = rng_stream::derive(5, "test.order", uint64_t(i));
    gen::render(gen::random_scene(rng, false), 32, 0, 1, rgb);
    const bool png = i % 3 == 2;
    samples.push_back(raw_of(modality::image, gen::encode_image(rgb, 32, png ? gen::image_format::png : gen::image_format::jpeg), png ? "png" : "jpg"));
  }
  const auto mp4 = gen::encode_mp4(moving_frames(16, 32), {32, 10, 8});
  samples.push_back(raw_of(modality::video, mp4, "mp4"));
  data::media_decoder forward({16, 2, 64});
  std::vector<std::vector<uint8_t>> a;
  for (const auto& s : samples) a.push_back(forward.decode(s, false).pixels);
  for (size_t i = samples.size(); i-- > 0;) {
    CAPTURE(i);
    data::media_decoder fresh({16, 2, 64});
    CHECK(fresh.decode(samples[i], false).pixels == a[i]);
  }
  // Output buffers recycled through a pixel_pool are not zeroed: every byte must be rewritten.
  // Buffers of videos (2 frames) go to images and back, full and keyframe-only decodes alike.
  auto pool = std::make_shared<data::pixel_pool>(1);
  data::media_decoder pooled({16, 2, 64}, pool);
  std::vector<uint8_t> garbage(16 * 16 * 3 * 2, 0xA5);
  for (int round = 0; round < 2; ++round)
    for (size_t i = samples.size(); i-- > 0;) {
      CAPTURE(i);
      pool->give(std::vector<uint8_t>(garbage));
      auto out = pooled.decode(samples[i], false);
      CHECK(out.pixels == a[i]);
      if (samples[i].kind == modality::video) {
        pool->give(std::move(out.pixels));
        CHECK(pooled.decode(samples[i], true).pixels == data::media_decoder({16, 2, 64}).decode(samples[i], true).pixels);
      }
      pool->give(std::move(out.pixels));
      (void)pool->take();  // the pool holds at most one buffer: drop it, the next round starts from garbage
    }
}
