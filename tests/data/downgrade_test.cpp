// Acceptance: modality downgrade. The real stage cores run in a discrete-event simulation on
// simulated_clock with a slow tensor stage (packing costs per distinct frame, as in
// tensorizer.cpp). With downgrade on, the tensor stage reports the share of videos packing
// cannot carry, that share is decoded keyframe-only, and after warm-up the rank never waits
// longer than the bound; the same run with downgrade off waits past the bound on every step,
// so the test can fail. Where packing can carry some videos in full, the share downgraded is
// within 10 points of the least fixed share that keeps the wait under 5%.
// Simulated time makes the bound exact and the run identical every time: no flaky timing.
#include "core/clock.hpp"
#include "flow_cores.hpp"

#include <doctest/doctest.h>

#include <deque>
#include <optional>

using namespace msomni;
using namespace std::chrono_literals;

namespace {

struct sim_costs {
  nanos image_decode = 4ms, video_decode = 30ms, keyframe_decode = 5ms;
  nanos pack_per_sample = 2ms, pack_per_frame = 12ms;  // the artificially slow tensor stage
  nanos train_step = 80ms;
  uint32_t video_frames = 4;
};

// Batches before the share is known take effect: those decoded before the first were packed.
constexpr uint64_t warm_up_batches = 10;

struct sim_result {
  uint64_t batches = 0, videos = 0, downgrades = 0, downgraded_in_batches = 0, videos_in_batches = 0;
  double max_wait_ms = 0;    // after warm-up
  double total_wait_ms = 0;  // after warm-up
  double share() const { return videos_in_batches ? double(downgraded_in_batches) / videos_in_batches : 0; }
  // The consumer's wait as a share of its time after warm-up.
  double wait_share(const sim_costs& c) const {
    const double step_ms = std::chrono::duration<double, std::milli>(c.train_step).count();
    return total_wait_ms / (total_wait_ms + step_ms * double(batches - warm_up_batches));
  }
};

// `fixed_share`: the pool downgrades that share of videos whatever the tensor stage says (to
// find the least share that keeps up); otherwise it follows the tensor stage's pressure.
sim_result simulate(bool downgrade, int batches_wanted, const sim_costs& c = {},
                    std::optional<double> fixed_share = std::nullopt) {
  simulated_clock clock;
  const std::vector<modality> kinds = {modality::image, modality::video};
  const std::vector<uint32_t> depth = {8, 8};
  data::reader_core reader(2);
  data::pool_limits limits{kinds, depth, {1, 1, 1}, 2, downgrade, true};
  data::decode_pool_core pool(limits);
  data::tensor_core tensor({"images", "videos"}, kinds, depth,
                           data::order_core(data::mixer_core({1, 1}, data::mix_strategy::balanced_by_weight, 1),
                                            {0, 1, 1, 4}),
                           2);
  for (const auto& g : pool.initial_reader_credits()) reader.on_credit(g);
  for (const auto& g : tensor.initial_credits()) pool.on_tensor_credit(g);

  std::vector<uint64_t> seq(2, 0);
  std::deque<std::vector<data::decoded_sample>> packed;  // batches ready for the consumer
  bool packing = false, consumer_waiting = false;
  time_point wait_started{};
  time_point last_pull{};
  double last_interval_ms = 0;
  sim_result r;
  data::bad_data_counts bad;

  std::function<void()> pump;
  auto finish_pack = [&](std::vector<data::decoded_sample> b) {
    packing = false;
    packed.push_back(std::move(b));
    pump();
  };
  pump = [&] {
    // Reader: instant reads of synthetic samples while credits last.
    while (auto s = reader.next_read([](uint32_t) { return true; })) {
      data::raw_sample raw;
      raw.kind = kinds[*s];
      raw.key = std::string(to_string(raw.kind)) + "/" + std::to_string(seq[*s]);
      raw.pos = {*s, seq[*s], seq[*s]};  // one rank: its n-th sample of a source is draw n
      ++seq[*s];
      pool.on_raw(std::move(raw));
    }
    // Decode pool: the tensor stage's latest pressure decides downgrades.
    auto pressure = tensor.pressure(0, uint32_t(packed.size()));
    if (fixed_share) pressure.downgrade_share = *fixed_share;
    pool.on_pressure(pressure);
    std::vector<msg::credit_grant> up;
    while (auto d = pool.next_dispatch(up)) {
      const bool video = d->sample.kind == modality::video;
      r.videos += video;
      const nanos cost = !video ? c.image_decode : d->keyframe_only ? c.keyframe_decode : c.video_decode;
      data::decoded_sample out;
      out.key = d->sample.key;
      out.kind = d->sample.kind;
      out.pos = d->sample.pos;
      out.downgraded = d->keyframe_only;
      out.frames = video ? c.video_frames : 1;
      out.unique_frames = video && !d->keyframe_only ? c.video_frames : 1;
      clock.schedule_after(cost, [&, out = std::move(out)]() mutable {
        pool.on_done(out.kind, 0);
        tensor.on_decoded(std::move(out));
        pump();
      });
    }
    for (const auto& g : up) reader.on_credit(g);
    // Tensor stage: one packer; assembling a batch takes its slots, packing takes time.
    if (!packing) {
      std::vector<msg::credit_grant> grants;
      if (auto b = tensor.next_batch(grants, bad)) {
        packing = true;
        nanos cost{0};
        uint32_t unique = 0, full = 0;
        for (const auto& x : *b) {
          cost += c.pack_per_sample + c.pack_per_frame * x.unique_frames;
          unique += x.unique_frames;
          full += x.frames;
        }
        const double ms = std::chrono::duration<double, std::milli>(cost).count();
        clock.schedule_after(cost, [&, b = std::move(*b), ms, unique, full]() mutable {
          tensor.on_batch_timing(ms, unique, full, last_interval_ms);
          finish_pack(std::move(b));
        });
      }
      for (const auto& g : grants) pool.on_tensor_credit(g);
      if (!grants.empty()) pump();
    }
    // Consumer: takes a batch, trains for train_step, asks again.
    if (consumer_waiting && !packed.empty()) {
      consumer_waiting = false;
      const double wait = std::chrono::duration<double, std::milli>(clock.now() - wait_started).count();
      if (r.batches >= warm_up_batches) {
        r.max_wait_ms = std::max(r.max_wait_ms, wait);
        r.total_wait_ms += wait;
        for (const auto& x : packed.front()) {
          r.downgraded_in_batches += x.downgraded;
          r.videos_in_batches += x.kind == modality::video;
        }
      }
      packed.pop_front();
      tensor.on_batch_taken();
      tensor.on_consumer_wait(last_interval_ms, wait);
      last_pull = clock.now();
      ++r.batches;
      if (int(r.batches) < batches_wanted)
        clock.schedule_after(c.train_step, [&] {
          consumer_waiting = true;
          wait_started = clock.now();
          // The consumer's own step: from taking a batch to asking for the next (no waiting).
          last_interval_ms = std::chrono::duration<double, std::milli>(clock.now() - last_pull).count();
          pump();
        });
      pump();
    }
  };
  consumer_waiting = true;
  pump();
  while (int(r.batches) < batches_wanted && clock.run_next()) {
  }
  r.downgrades = pool.downgrades();
  return r;
}

}  // namespace

TEST_CASE("a slow tensor stage makes videos keyframe-only and the rank's wait stays bounded") {
  constexpr double bound_ms = 20;
  const sim_result on = simulate(true, 200);
  const sim_result off = simulate(false, 200);
  MESSAGE("downgrade on: " << on.downgrades << "/" << on.videos << " videos downgraded, max wait " << on.max_wait_ms
                           << " ms; off: max wait " << off.max_wait_ms << " ms");
  REQUIRE(on.batches == 200);
  REQUIRE(off.batches == 200);
  CHECK(on.downgrades > 0);
  CHECK(on.downgrades <= on.videos);
  CHECK(on.downgraded_in_batches > 0);
  CHECK(on.max_wait_ms <= bound_ms);
  CHECK(off.downgrades == 0);
  CHECK(off.max_wait_ms > bound_ms);  // without downgrade the same load stalls the rank
}

TEST_CASE("only as many videos are downgraded as packing cannot carry: near the least share that keeps up") {
  // Packing a batch in full takes about 1.2 steps: some videos fit in full, not all.
  sim_costs c;
  c.pack_per_frame = 9ms;
  const sim_result adaptive = simulate(true, 300, c);
  // The least fixed share whose wait stays under 5% of the consumer's time, in steps of 0.05.
  double least = 1.0;
  for (int k = 0; k <= 20; ++k) {
    const sim_result fixed = simulate(true, 300, c, k * 0.05);
    if (fixed.wait_share(c) < 0.05) {
      least = k * 0.05;
      break;
    }
  }
  const sim_result all = simulate(true, 300, c, 1.0);
  MESSAGE("downgraded: " << adaptive.share() << " of videos (least that keeps the wait under 5%: " << least
                         << "), wait " << adaptive.wait_share(c) << " of the time; every video: wait "
                         << all.wait_share(c));
  REQUIRE(adaptive.batches == 300);
  CHECK(least < 0.9);  // the case is one where downgrading every video is too much
  CHECK(adaptive.share() >= least - 0.10);
  CHECK(adaptive.share() <= least + 0.10);
  CHECK(adaptive.wait_share(c) < 0.05);
}

TEST_CASE("a fast tensor stage downgrades nothing") {
  sim_costs fast;
  fast.pack_per_frame = 1ms;
  const sim_result r = simulate(true, 100, fast);
  CHECK(r.batches == 100);
  CHECK(r.downgrades == 0);
  CHECK(r.max_wait_ms == 0);
}

TEST_CASE("the simulation is deterministic") {
  const sim_result a = simulate(true, 60), b = simulate(true, 60);
  CHECK(a.downgrades == b.downgrades);
  CHECK(a.max_wait_ms == b.max_wait_ms);
  CHECK(a.videos == b.videos);
}

TEST_CASE("credit grants are held until a source owes half its depth and then sent summed") {
  CHECK(data::half_depths({36, 12, 1, 3}) == std::vector<uint32_t>{18, 6, 1, 1});
  data::credit_batcher b(data::half_depths({8, 2}));
  for (int i = 0; i < 3; ++i) b.add({{0, modality::image, 1, 0}});
  b.add({{0, modality::text, 1, 1}});
  const auto first = b.take();  // text reached its 1; images owe 3 of 4
  REQUIRE(first.size() == 1);
  CHECK(first[0] == msg::credit_grant{0, modality::text, 1, 1});
  CHECK(b.owed(0) == 3);
  b.add({{0, modality::image, 1, 0}, {0, modality::image, 2, 0}});
  const auto second = b.take();
  REQUIRE(second.size() == 1);
  CHECK(second[0] == msg::credit_grant{0, modality::image, 6, 0});
  CHECK(b.owed(0) == 0);
  CHECK(b.take().empty());
  CHECK_THROWS_AS(data::credit_batcher({0}), std::invalid_argument);
}
