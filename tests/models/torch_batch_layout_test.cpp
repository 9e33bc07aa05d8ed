// The torch backend's pure parts: where a micro-batch lies in the shared memory, what the
// worker is told of it, the seed each micro-batch's forward draws from, and the probe batch.
#include "config/config_loader.hpp"
#include "support/config_text.hpp"
#include "torch_module/batch_layout.hpp"
#include "torch_module/probe_batch.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace msomni;

namespace {

model::micro_batch small_batch() {
  model::micro_batch mb;
  mb.batch = 2;
  mb.max_patches = 3;
  mb.patch_dim = 5;
  mb.text_len = 7;
  for (int i = 0; i < 2 * 3 * 5; ++i) mb.patches.push_back(static_cast<float>(i) / 10.0f);
  mb.patch_counts = {3, 0};
  for (int i = 0; i < 14; ++i) mb.tokens.push_back(100 + i);
  mb.loss_mask.assign(14, 1);
  mb.loss_mask[0] = mb.loss_mask[7] = 0;
  mb.modalities = {modality::image, modality::text};
  return mb;
}

}  // namespace

TEST_CASE("a micro-batch's fields lie in shared memory on 64-byte boundaries, in the documented order") {
  const auto mb = small_batch();
  const auto l = models::layout_of(mb);
  CHECK(l.patches == 0);
  CHECK(l.patch_counts == 128);  // 30 floats = 120 bytes, rounded up
  CHECK(l.tokens == 192);        // 2 int32
  CHECK(l.loss_mask == 256);     // 14 int32 = 56 bytes
  CHECK(l.modalities == 320);    // 14 bytes
  CHECK(l.bytes == 384);
  std::vector<std::byte> memory(static_cast<size_t>(l.bytes));
  models::write_batch(mb, l, memory);
  float patch = 0;
  std::memcpy(&patch, memory.data() + l.patches + 4 * 29, 4);
  CHECK(patch == doctest::Approx(2.9f));
  int32_t count = 0, token = 0;
  std::memcpy(&count, memory.data() + l.patch_counts, 4);
  std::memcpy(&token, memory.data() + l.tokens + 4 * 13, 4);
  CHECK(count == 3);
  CHECK(token == 113);
  CHECK(static_cast<int>(memory[static_cast<size_t>(l.loss_mask + 7)]) == 0);
  CHECK(static_cast<int>(memory[static_cast<size_t>(l.modalities + 1)]) == static_cast<int>(modality::text));
  std::vector<std::byte> short_memory(static_cast<size_t>(l.bytes - 1));
  CHECK_THROWS_AS(models::write_batch(mb, l, short_memory), std::invalid_argument);

  const auto d = models::describe_batch(mb, l);
  CHECK(d.at("dims") == nlohmann::json::array({2, 3, 5, 7}));
  CHECK(d.at("offsets").at("modalities") == 320);
}

TEST_CASE("a text-only micro-batch has no patch bytes") {
  auto mb = small_batch();
  mb.max_patches = 0;
  mb.patches.clear();
  mb.patch_counts = {0, 0};
  mb.modalities = {modality::text, modality::text};
  const auto l = models::layout_of(mb);
  CHECK(l.patch_counts == 0);
  CHECK(l.bytes == 256);
}

TEST_CASE("each micro-batch's forward seed follows the job seed, the step and its contents, not its place in the step") {
  const auto mb = small_batch();
  const auto seed = models::micro_batch_seed(7, 3, mb);
  CHECK(seed == models::micro_batch_seed(7, 3, mb));
  CHECK(seed < (uint64_t{1} << 63));
  CHECK(seed != models::micro_batch_seed(8, 3, mb));
  CHECK(seed != models::micro_batch_seed(7, 4, mb));
  auto other = mb;
  other.tokens[5] += 1;
  CHECK(seed != models::micro_batch_seed(7, 3, other));
  other = mb;
  other.patches[0] += 0.5f;  // the same caption with another picture
  CHECK(seed != models::micro_batch_seed(7, 3, other));
}

TEST_CASE("the probe batch has the job's largest shape with a video, an image and a text sample") {
  auto text = testing::valid_config_text();
  text += "[model]\nimage_size = 16\npatch_size = 8\nvideo_frames = 2\nmax_seq_len = 64\n";
  auto cfg = config::load_string(text, "probe.toml", {"training.micro_batch=3", "training.grad_accum=1",
                                                       "training.global_batch=6"});
  const auto mb = models::make_probe_batch(cfg);
  mb.validate();
  CHECK(mb.batch == 3);
  CHECK(mb.max_patches == 8);
  CHECK(mb.patch_dim == 192);
  CHECK(mb.text_len == 56);
  CHECK(mb.patch_counts == std::vector<int32_t>{8, 4, 0});
  CHECK(mb.modalities == std::vector<modality>{modality::video, modality::image, modality::text});
  CHECK(mb.target_tokens() > 3 * 40);
}
