// What a rank says about its memory: the features of a batch (samples per modality, patches by
// kind, non-padding text tokens, the model's sequence length), a step's micro-batches summed,
// the upcoming ones grouped into whole steps; and the probe's samples: a step's exact peak (the
// account's, then reset), in-step samples only while a step runs and at most max_in_step of them.
#include "memory_features.hpp"
#include "memory_probe.hpp"

#include "messages/catalog.hpp"
#include "model/text_tokens.hpp"
#include "ops.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <doctest/doctest.h>

using namespace msomni;
using namespace msomni::rank_worker;

namespace {

model::micro_batch batch_of(std::vector<modality> kinds, std::vector<int32_t> patches, int64_t max_patches,
                            int64_t text_len, std::vector<int64_t> text_lengths) {
  model::micro_batch b;
  b.batch = static_cast<int64_t>(kinds.size());
  b.max_patches = max_patches;
  b.text_len = text_len;
  b.modalities = kinds;
  b.patch_counts = patches;
  for (size_t i = 0; i < kinds.size(); ++i)
    for (int64_t t = 0; t < text_len; ++t) b.tokens.push_back(t < text_lengths[i] ? 65 : model::token_pad);
  return b;
}

}  // namespace

TEST_CASE("a batch's memory features count samples, patches by kind, real tokens and the model's sequence") {
  const auto b = batch_of({modality::image, modality::video, modality::text, modality::video}, {16, 32, 0, 16}, 32, 40,
                          {10, 20, 40, 1});
  const auto f = features_of(b);
  CHECK(f.image_samples == 1);
  CHECK(f.video_samples == 2);
  CHECK(f.text_samples == 1);
  CHECK(f.image_patches == 16);
  CHECK(f.video_patches == 48);
  CHECK(f.text_tokens == 71);  // padding is not counted
  CHECK(f.seq_len == 72);      // patch slots + text positions
  CHECK(f.micro_batch == 4);
}

TEST_CASE("a step's micro-batches add up and upcoming micro-batches become whole steps, at most the horizon") {
  msg::batch_features a{1, 0, 1, 16, 0, 30, 48, 2}, b{0, 2, 0, 0, 64, 20, 96, 2};
  msg::batch_features step;
  add_micro_batch(step, a);
  add_micro_batch(step, b);
  CHECK(step == msg::batch_features{1, 2, 1, 16, 64, 50, 96, 2});
  const std::vector<msg::batch_features> five{a, b, a, b, a};
  const auto steps = steps_of(five, 2, 10);
  REQUIRE(steps.size() == 2);  // the fifth micro-batch is half a step: left out
  CHECK(steps[0] == step);
  CHECK(steps_of(five, 1, 3).size() == 3);
  CHECK(steps_of(five, 0, 10).size() == 5);  // grad_accum below 1 counts as 1
  CHECK(steps_of({}, 2, 10).empty());
}

TEST_CASE("the probe sends a step's exact peak and samples within a step only while one runs, bounded") {
  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 2)};
  caf::scoped_actor orchestrator{sys};
  auto account = std::make_shared<kernels::memory_account>();
  account->set_budget(1 << 30);
  auto cpu = kernels::make_cpu_ops(1, account);
  void* params = cpu->allocate(1 << 20);
  (void)account->take_peak();
  // A long interval: this test asks for in-step samples itself rather than waiting on the timer.
  memory_probe probe(sys, caf::actor_cast<msg::orchestrator_actor>(orchestrator), account, nullptr, {std::chrono::milliseconds(3'600'000), 2});
  CHECK_FALSE(probe.in_step_sample());  // no step runs
  probe.step_started({"rank-1", 4, 1, 2}, 7);
  void* workspace = cpu->allocate(1 << 21);
  const auto during = probe.in_step_sample();
  REQUIRE(during);
  CHECK(during->in_step);
  CHECK(during->name == "rank-1");
  CHECK(during->epoch == 4);
  CHECK(during->rank == 1);
  CHECK(during->world_size == 2);
  CHECK(during->step == 7);
  CHECK(during->in_use_bytes == (1u << 20) + (1u << 21));
  CHECK(during->budget_bytes == 1u << 30);
  CHECK(probe.in_step_sample());
  CHECK_FALSE(probe.in_step_sample());  // max_in_step reached
  cpu->release(workspace);
  const auto sent = probe.step_ended({1, 0, 1, 16, 0, 30, 48, 2}, {{0, 0, 2, 0, 0, 40, 48, 2}});
  CHECK_FALSE(sent.in_step);
  CHECK(sent.in_use_bytes == 1u << 20);
  CHECK(sent.peak_bytes == (1u << 20) + (1u << 21));  // the workspace was held during the step
  CHECK(sent.batch.text_tokens == 30);
  REQUIRE(sent.upcoming.size() == 1);
  CHECK(account->peak() == 1u << 20);  // the next step's peak starts at what is held
  CHECK_FALSE(probe.in_step_sample());
  bool received = false;
  orchestrator->receive([&](const msg::memory_sample& s) { received = s == sent; },
                        caf::after(std::chrono::seconds(30)) >> [] {});
  CHECK(received);
  probe.step_started({"rank-1", 4, 1, 2}, 8);
  probe.step_aborted();  // a lost peer: the step never ends
  CHECK_FALSE(probe.in_step_sample());
  cpu->release(params);
}
