// The CAF actor shells: stages as actors on a real (threaded) actor system deliver the same
// batches as the in-thread reference when nothing is downgraded, resume from a saved state,
// report bad data, and turn a source that is all damage into an error instead of a hang.
#include "data_actors.hpp"
#include "model_batch.hpp"
#include "data_test_support.hpp"
#include "messages/catalog.hpp"
#include "metrics/metrics_registry.hpp"
#include "scene.hpp"
#include "tar_format.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <memory_resource>
#include <map>

using namespace msomni;

namespace {

struct threaded_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  threaded_system() {
    register_catalog(cfg);
    cfg.set("scheduler.max-threads", 2);
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

// Ordinary memory, counting what is allocated in it (the rank's batch memory stands here).
class counting_memory final : public std::pmr::memory_resource {
 public:
  size_t allocations = 0;

 private:
  void* do_allocate(size_t bytes, size_t align) override {
    ++allocations;
    return std::pmr::new_delete_resource()->allocate(bytes, align);
  }
  void do_deallocate(void* p, size_t bytes, size_t align) override {
    std::pmr::new_delete_resource()->deallocate(p, bytes, align);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

}  // namespace

TEST_CASE("the actor pipeline's tensor stage packs the model's batches into the batch memory it is given") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  job.io.downgrade_video = false;
  auto setup = data::make_pipeline_setup(job);
  threaded_system ts;
  {
    data::actor_pipeline plain(*ts.sys, setup, testing::slot(0, 1));
    plain.next_batch();
    CHECK_THROWS_WITH_AS(plain.take_model_batch(), doctest::Contains("no batch memory"), std::logic_error);
  }
  auto memory = std::make_shared<counting_memory>();
  setup.batch_memory = memory;
  data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    const data::micro_batch b = p.next_batch();
    const model::micro_batch want = data::to_model_batch(b);
    const model::micro_batch got = p.take_model_batch();
    CHECK(got.patches.get_allocator().resource() == memory.get());
    CHECK(got.batch == want.batch);
    CHECK(got.max_patches == want.max_patches);
    CHECK(got.text_len == want.text_len);
    CHECK(std::equal(got.patches.begin(), got.patches.end(), want.patches.begin(), want.patches.end()));
    CHECK(got.patch_counts == want.patch_counts);
    CHECK(got.tokens == want.tokens);
    CHECK(got.loss_mask == want.loss_mask);
    CHECK(got.modalities == want.modalities);
    CHECK_THROWS_WITH_AS(p.take_model_batch(), doctest::Contains("already taken"), std::logic_error);
  }
  CHECK(memory->allocations >= 6);
}

TEST_CASE("the actor pipeline delivers the reference batches and resumes from its state") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  job.io.downgrade_video = false;  // keyframe-only decodes would differ from the reference
  job.io.decode_workers = 3;
  const auto setup = data::make_pipeline_setup(job);
  data::data_pipeline reference(setup, testing::slot(0, 1));
  std::vector<data::micro_batch> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(reference.next_batch());

  threaded_system ts;
  std::vector<uint8_t> state;
  {
    data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
    for (int i = 0; i < 8; ++i) REQUIRE(p.next_batch() == expected[size_t(i)]);
    state = p.save_state();
    CHECK(p.metrics().batches == 8);
    CHECK(p.downgrades() == 0);
  }
  data::actor_pipeline resumed(*ts.sys, setup, testing::slot(0, 1), data::make_local_storage(), state);
  for (int i = 8; i < 20; ++i) {
    CAPTURE(i);
    REQUIRE(resumed.next_batch() == expected[size_t(i)]);
  }
}

TEST_CASE("the actor pipeline takes its share of the global order and follows a reslot") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  job.io.downgrade_video = false;
  const auto setup = data::make_pipeline_setup(job);
  // The reference: one rank, every micro-batch of 8 steps of 16 samples, by global index.
  data::data_pipeline reference(setup, testing::slot(0, 1, 4));
  std::map<uint64_t, data::micro_batch> expected;
  for (int i = 0; i < 32; ++i) {
    auto b = reference.next_batch();
    expected.emplace(b.index, std::move(b));
  }
  threaded_system ts;
  data::actor_pipeline p(*ts.sys, setup, testing::slot(1, 2, 2));
  for (uint64_t step = 0; step < 3; ++step)
    for (uint64_t k = 0; k < 2; ++k) {
      const auto b = p.next_batch();
      CHECK(b.index == step * 4 + k * 2 + 1);  // micro-step k of rank 1 of 2
      REQUIRE(b == expected.at(b.index));
    }
  p.next_batch();
  CHECK_THROWS_AS(p.reslot(testing::slot(0, 1, 4)), std::logic_error);  // mid-step
  p.next_batch();
  p.reslot(testing::slot(3, 4, 1));  // step boundary after 4 steps
  for (uint64_t step = 4; step < 8; ++step) {
    const auto b = p.next_batch();
    CHECK(b.index == step * 4 + 3);
    REQUIRE(b == expected.at(b.index));
  }
  CHECK(p.metrics().batches == 12);
}

TEST_CASE("the actor pipeline counts bad data and fails with a reason on an all-bad source") {
  testing::temp_dir dir;
  {
    data::tar_writer w((dir.path() / "x.tar").string());
    const std::string junk = "not a jpeg";
    for (int i = 0; i < 4; ++i) {
      w.add("k" + std::to_string(i) + ".jpg", {reinterpret_cast<const uint8_t*>(junk.data()), junk.size()});
      w.add("k" + std::to_string(i) + ".txt", {reinterpret_cast<const uint8_t*>(junk.data()), junk.size()});
    }
    w.finish();
  }
  config::job_config job;
  job.training.micro_batch = 2;
  job.model.image_size = 16;
  job.model.max_seq_len = 64;
  job.data.sources = {{"junk", dir.path().string(), 1.0, modality::image}};
  threaded_system ts;
  data::actor_pipeline p(*ts.sys, data::make_pipeline_setup(job), {0, 1, 1, 2});
  CHECK_THROWS_WITH_AS(p.next_batch(), doctest::Contains("10000 bad samples in a row"), std::runtime_error);
  // Only the slot's own sample is counted (the ones tried as replacements count at their own
  // slots); the failing slot is the first, so exactly one.
  CHECK(p.bad_data()[data::bad_reason::corrupt_image] == 1);
}

// What a rank's metrics refresher reads while the stages run (live_data_metrics): both
// pipelines keep it, within each stage's bound; and the stage actors account the messages they
// handle in the registry they are given.
TEST_CASE("both pipelines keep the live data metrics, and the stage actors account their messages") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  job.io.downgrade_video = false;
  auto setup = data::make_pipeline_setup(job);
  setup.registry = std::make_shared<metrics::metrics_registry>();
  threaded_system ts;
  for (const bool actors : {true, false}) {
    CAPTURE(actors);
    auto live = std::make_shared<data::live_data_metrics>();
    setup.live = live;
    if (actors) {
      data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
      for (int i = 0; i < 4; ++i) p.next_batch();
    } else {
      data::data_pipeline p(setup, testing::slot(0, 1));
      for (int i = 0; i < 4; ++i) p.next_batch();
    }
    for (const auto m : {modality::image, modality::video, modality::text}) {
      CAPTURE(to_string(m));
      CHECK(live->decoded[size_t(m)].load() > 0);
      CHECK(live->decode_ns[size_t(m)].load() > 0);
    }
    for (const auto* stage : {&live->reader, &live->decoder, &live->tensor}) {
      CHECK(stage->capacity.load() >= 1);
      CHECK(stage->fill.load() <= stage->capacity.load());
    }
    CHECK(live->downgrades.load() == 0);
    for (const auto& bad : live->bad) CHECK(bad.load() == 0);
  }
  std::map<std::string, double> handled;  // actor -> messages
  for (const auto& f : setup.registry->collect())
    if (f.name == "msomni_actor_messages_total")
      for (const auto& m : f.metric)
        for (const auto& l : m.label)
          if (l.name == "actor") handled[l.value] += m.counter.value;
  for (const char* actor : {"data_reader", "decode_worker", "decode_pool", "data_tensor"}) {
    CAPTURE(actor);
    CHECK(handled[actor] > 0);
  }
}

// The live downgrade path on the real actor pipeline: the tensor stage is slowed through the
// test knob (pipeline_setup::test_extra_pack_ms_per_frame, 3 ms per converted frame) while the
// consumer asks for the next batch at once, so packing a batch takes longer than the
// consumer's step and the stage reports saturation. Which videos get downgraded depends on
// timing, so nothing here asserts a count or a duration: only that some were downgraded, that
// each downgraded slot is a video whose pixels differ from the full-quality reference (its
// frames are keyframes, not the sampled frames; every generated video moves), that every
// other slot equals the reference, that the metrics count at least the delivered downgrades,
// and that with downgrade disabled the same slowed pipeline downgrades nothing.
TEST_CASE("the actor pipeline downgrades videos to keyframe-only while the test knob slows its tensor stage") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  job.io.downgrade_video = false;
  data::data_pipeline reference(data::make_pipeline_setup(job), testing::slot(0, 1));
  constexpr size_t batches = 30;
  std::vector<data::micro_batch> expected;
  for (size_t i = 0; i < batches; ++i) expected.push_back(reference.next_batch());

  struct outcome {
    uint64_t delivered_downgrades = 0, metric_downgrades = 0, counted = 0, video_slots = 0;
    bool slots_ok = true;
  };
  auto run = [&](bool downgrade) {
    auto j = job;
    j.io.downgrade_video = downgrade;
    auto setup = data::make_pipeline_setup(j);
    setup.test_extra_pack_ms_per_frame = 3;
    threaded_system ts;
    data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
    outcome out;
    for (size_t i = 0; i < batches; ++i) {
      const data::micro_batch& b = p.next_batch();
      const data::micro_batch& ref = expected[i];
      REQUIRE(b.keys == ref.keys);  // the order never depends on downgrades
      const size_t slot_floats = b.patches.size() / b.keys.size();
      for (size_t k = 0; k < b.keys.size(); ++k) {
        CAPTURE(b.keys[k]);
        const bool same = std::equal(b.patches.begin() + k * slot_floats, b.patches.begin() + (k + 1) * slot_floats,
                                     ref.patches.begin() + k * slot_floats);
        if (b.kinds[k] == modality::video) ++out.video_slots;
        if (b.downgraded[k]) {
          ++out.delivered_downgrades;
          out.slots_ok = out.slots_ok && b.kinds[k] == modality::video && !same;
        } else {
          out.slots_ok = out.slots_ok && same;
        }
      }
    }
    out.metric_downgrades = p.metrics().downgrades;
    out.counted = p.downgrades();
    return out;
  };

  const outcome on = run(true);
  CHECK(on.video_slots > 0);
  CHECK(on.delivered_downgrades > 0);
  CHECK(on.slots_ok);
  CHECK(on.metric_downgrades == on.counted);
  CHECK(on.metric_downgrades >= on.delivered_downgrades);  // read-ahead may hold more

  const outcome off = run(false);
  CHECK(off.video_slots > 0);
  CHECK(off.delivered_downgrades == 0);
  CHECK(off.metric_downgrades == 0);
  CHECK(off.slots_ok);
}

// What a resume amid downgrades changes: restore_state on a live pipeline (as a rollback does)
// continues with the same samples in the same slots as a straight run; a slot's pixels differ
// only where one of the two runs downgraded that video (the downgrade follows live timing,
// which a resume cannot replay); every other slot is byte-identical.
TEST_CASE("a pipeline restored amid downgrades delivers the same samples slot for slot, differing only in downgraded videos") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  auto setup = data::make_pipeline_setup(job);
  setup.test_extra_pack_ms_per_frame = 3;  // downgrades happen
  constexpr size_t batches = 24, cut = 10;
  threaded_system ts;
  std::vector<data::micro_batch> straight;
  {
    data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
    for (size_t i = 0; i <= batches; ++i) straight.push_back(p.next_batch());
  }
  data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
  std::vector<uint8_t> state;
  for (size_t i = 0; i < cut; ++i) {
    p.next_batch();
    if (i + 1 == cut) state = p.save_state();
  }
  for (size_t i = cut; i < cut + 5; ++i) p.next_batch();  // read past the state, then go back
  p.restore_state(state);
  uint64_t either_downgraded = 0, compared = 0;
  for (size_t i = cut; i < batches; ++i) {
    const data::micro_batch& b = p.next_batch();
    const data::micro_batch& s = straight[i];
    REQUIRE(b.keys == s.keys);
    REQUIRE(b.index == s.index);
    const size_t slot_floats = b.patches.size() / b.keys.size();
    for (size_t k = 0; k < b.keys.size(); ++k) {
      CAPTURE(b.keys[k]);
      const bool same = std::equal(b.patches.begin() + k * slot_floats, b.patches.begin() + (k + 1) * slot_floats,
                                   s.patches.begin() + k * slot_floats);
      if (b.downgraded[k] != s.downgraded[k]) {
        ++either_downgraded;
        CHECK(b.kinds[k] == modality::video);
        CHECK_FALSE(same);
      } else {
        ++compared;
        CHECK(same);  // both full, or both keyframe-only: the same bytes
      }
    }
  }
  MESSAGE(either_downgraded << " slots downgraded in one run only, " << compared << " identical");
  CHECK(compared > 0);
  CHECK_THROWS_AS(p.restore_state(std::vector<uint8_t>{1, 2, 3}), std::invalid_argument);
  // A refused state leaves the running stages as they were: the next batch follows on.
  CHECK(p.next_batch().keys == straight[batches].keys);
}

TEST_CASE("both pipelines count PNGs named .jpeg as mismatched names in the live metrics, not as bad") {
  testing::temp_dir dir;
  gen::quiet_ffmpeg_logs();
  {
    data::tar_writer w((dir.path() / "a.tar").string());
    for (int i = 0; i < 8; ++i) {
      auto rng = rng_stream::derive(uint64_t(i), "test.mismatched");
      std::vector<uint8_t> rgb;
      gen::render(gen::random_scene(rng, false), 32, 0, 1, rgb);
      const std::string caption = "a shape " + std::to_string(i);
      w.add(std::to_string(i) + ".jpeg", gen::encode_image(rgb, 32, gen::image_format::png));
      w.add(std::to_string(i) + ".txt", std::vector<uint8_t>(caption.begin(), caption.end()));
    }
    w.finish();
  }
  auto job = testing::tiny_job(dir.path());
  job.data.sources = {{"misnamed", dir.path().string(), 1.0, modality::image}};
  auto setup = data::make_pipeline_setup(job);
  threaded_system ts;
  for (const bool actors : {true, false}) {
    CAPTURE(actors);
    auto live = std::make_shared<data::live_data_metrics>();
    setup.live = live;
    if (actors) {
      data::actor_pipeline p(*ts.sys, setup, testing::slot(0, 1));
      for (int i = 0; i < 2; ++i) p.next_batch();
      CHECK(p.bad_data().total() == 0);
      CHECK(p.metrics().mismatched_name >= 8);
    } else {
      data::data_pipeline p(setup, testing::slot(0, 1));
      for (int i = 0; i < 2; ++i) p.next_batch();
      CHECK(p.bad_data().total() == 0);
      CHECK(p.metrics().mismatched_name == live->mismatched_name.load());
    }
    // Every decoded sample is a misnamed PNG: each delivered one was counted, none is bad. (A
    // decode still in flight may be counted as decoded a moment before as mismatched.)
    const uint64_t mismatched = live->mismatched_name.load();
    CHECK(mismatched >= 8);
    CHECK(mismatched <= live->decoded[size_t(modality::image)].load());
    for (const auto& bad : live->bad) CHECK(bad.load() == 0);
  }
}
