// Decoding is bounded by the pixels a medium's header states (io.max_image_pixels,
// io.max_video_pixels): the size is read from the PNG IHDR, the JPEG frame header or the video
// stream before anything is decoded, and a medium stating more is bad as too_many_pixels.
#include "data_test_support.hpp"
#include "media_decoder.hpp"
#include "media_encode.hpp"
#include "media_format.hpp"
#include "scene.hpp"

#include <doctest/doctest.h>

using namespace msomni;

namespace {

std::vector<uint8_t> rgb_of(int size, int seed) {
  auto rng = rng_stream::derive(uint64_t(seed), "test.pixel_bound");
  std::vector<uint8_t> rgb;
  gen::render(gen::random_scene(rng, false), size, 0, 1, rgb);
  return rgb;
}

data::raw_sample sample(modality kind, std::vector<uint8_t> media, std::string ext) {
  data::raw_sample r;
  r.key = "shard.tar/000001";
  r.kind = kind;
  r.media = std::move(media);
  r.media_ext = std::move(ext);
  r.caption = "a shape";
  return r;
}

data::decode_options bounded(uint64_t image_pixels, uint64_t video_pixels) {
  data::decode_options o;
  o.image_size = 16;
  o.max_image_pixels = image_pixels;
  o.max_video_pixels = video_pixels;
  return o;
}

}  // namespace

TEST_CASE("an image's stated size is read from its PNG or JPEG header") {
  for (const int size : {16, 64, 96}) {
    const auto png = gen::encode_image(rgb_of(size, size), size, gen::image_format::png);
    const auto jpg = gen::encode_image(rgb_of(size, size), size, gen::image_format::jpeg);
    const auto p = data::image_pixel_size("png", png);
    const auto j = data::image_pixel_size("jpg", jpg);
    REQUIRE(p);
    REQUIRE(j);
    CHECK(p->width == uint32_t(size));
    CHECK(p->height == uint32_t(size));
    CHECK(j->width == uint32_t(size));
    CHECK(j->height == uint32_t(size));
  }
  // A header that lies about a huge picture is read as it states.
  std::vector<uint8_t> ihdr = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                               0, 0, 0x3E, 0x80, 0, 0, 0x3E, 0x80, 8, 2, 0, 0, 0};
  const auto huge = data::image_pixel_size("png", ihdr);
  REQUIRE(huge);
  CHECK(huge->pixels() == uint64_t(16000) * 16000);
  // Cut or foreign bytes state nothing; the decoder judges them.
  CHECK_FALSE(data::image_pixel_size("png", std::span<const uint8_t>(ihdr.data(), 20)));
  const std::vector<uint8_t> soi_only = {0xFF, 0xD8, 0xFF, 0xD9};
  CHECK_FALSE(data::image_pixel_size("jpg", soi_only));
  CHECK_FALSE(data::image_pixel_size("mp4", ihdr));
}

TEST_CASE("an image stating more pixels than io.max_image_pixels is too_many_pixels, not decoded") {
  for (const auto fmt : {gen::image_format::png, gen::image_format::jpeg}) {
    const char* ext = fmt == gen::image_format::png ? "png" : "jpg";
    CAPTURE(ext);
    const auto bytes = gen::encode_image(rgb_of(64, 3), 64, fmt);
    data::media_decoder at_limit(bounded(64 * 64, 1 << 20));
    const auto ok = at_limit.decode(sample(modality::image, bytes, ext), false);
    CHECK_FALSE(ok.bad);
    data::media_decoder below(bounded(64 * 64 - 1, 1 << 20));
    const auto refused = below.decode(sample(modality::image, bytes, ext), false);
    CHECK(refused.bad);
    CHECK(refused.reason == data::bad_reason::too_many_pixels);
    CHECK(refused.pixels.empty());
    CHECK(std::string(data::to_string(refused.reason)) == "too_many_pixels");
  }
}

TEST_CASE("a video whose frames have more pixels than io.max_video_pixels is too_many_pixels, in both decode modes") {
  gen::quiet_ffmpeg_logs();
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 6; ++i) frames.push_back(rgb_of(48, 10 + i));
  gen::video_params vp;
  vp.size = 48;
  vp.gop = 3;
  const auto mp4 = gen::encode_mp4(frames, vp);
  for (const bool keyframes : {false, true}) {
    CAPTURE(keyframes);
    data::media_decoder at_limit(bounded(1 << 20, 48 * 48));
    CHECK_FALSE(at_limit.decode(sample(modality::video, mp4, "mp4"), keyframes).bad);
    data::media_decoder below(bounded(1 << 20, 48 * 48 - 1));
    const auto refused = below.decode(sample(modality::video, mp4, "mp4"), keyframes);
    CHECK(refused.bad);
    CHECK(refused.reason == data::bad_reason::too_many_pixels);
  }
  // A damaged video is still corrupt_video, not mistaken for an oversized one.
  auto cut = mp4;
  cut.resize(cut.size() / 3);
  data::media_decoder decoder(bounded(1 << 20, 1 << 20));
  const auto damaged = decoder.decode(sample(modality::video, cut, "mp4"), false);
  CHECK(damaged.bad);
  CHECK(damaged.reason == data::bad_reason::corrupt_video);
}
