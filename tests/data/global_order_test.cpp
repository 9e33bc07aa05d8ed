// The global sample order: each optimizer step takes the same samples at every world size
// (1, 2 and 4 ranks with the same global batch), a run resized 4 -> 2 -> 4 at step boundaries
// sees the same per-step samples as a static run, the state saved at a boundary is the same
// bytes on every rank and restores under another world size, bad samples are replaced by a
// world-independent rule, and a rank reads the bytes of its own samples only.
#include "data_test_support.hpp"
#include "global_order.hpp"
#include "pipeline_state.hpp"
#include "step_balance.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <set>

using namespace msomni;

namespace {

using step_keys = std::vector<std::multiset<std::string>>;  // per optimizer step: every sample's key

// The global batch is 16 = world x 4 x grad_accum.
int64_t accum_for(uint32_t world) { return 16 / (4 * int64_t(world)); }

// `ranks` pipelines of one world, `steps` optimizer steps; per-step key multisets and every
// micro-batch by its global micro-batch index.
struct world_run {
  step_keys keys;
  std::map<uint64_t, data::micro_batch> by_index;
  data::bad_data_counts bad;
};

void run_steps(std::vector<std::unique_ptr<data::data_pipeline>>& ranks, int steps, world_run& out) {
  for (int s = 0; s < steps; ++s) {
    std::multiset<std::string> keys;
    for (auto& p : ranks)
      for (int64_t k = 0; k < p->slot().grad_accum; ++k) {
        auto b = p->next_batch();
        keys.insert(b.keys.begin(), b.keys.end());
        REQUIRE(out.by_index.count(b.index) == 0);
        out.by_index.emplace(b.index, std::move(b));
      }
    out.keys.push_back(std::move(keys));
  }
}

std::vector<std::unique_ptr<data::data_pipeline>> make_world(const data::pipeline_setup& setup, uint32_t world,
                                                             std::shared_ptr<const data::storage> st = data::make_local_storage()) {
  std::vector<std::unique_ptr<data::data_pipeline>> out;
  for (uint32_t r = 0; r < world; ++r)
    out.push_back(std::make_unique<data::data_pipeline>(setup, testing::slot(r, world, accum_for(world)), st));
  return out;
}

world_run static_run(const data::pipeline_setup& setup, uint32_t world, int steps) {
  auto ranks = make_world(setup, world);
  world_run r;
  run_steps(ranks, steps, r);
  for (auto& p : ranks) r.bad.merge(p->bad_data());
  return r;
}

// 3 steps at 4 ranks, 3 at 2 (ranks 2 and 3 leave, 0 and 1 take the 2-rank slots), 3 at 4
// again (two joiners restore the survivors' state into world-4 slots), checking on the way that
// the position at each boundary is the same bytes on every rank.
world_run resized_4_2_4(const data::pipeline_setup& setup) {
  world_run resized;
  auto ranks = make_world(setup, 4);
  run_steps(ranks, 3, resized);
  const auto state = ranks[0]->save_state();
  for (auto& p : ranks) CHECK(p->save_state() == state);
  ranks.resize(2);
  for (uint32_t r = 0; r < 2; ++r) ranks[r]->reslot(testing::slot(r, 2, 2));
  run_steps(ranks, 3, resized);
  CHECK(ranks[0]->save_state() == ranks[1]->save_state());
  const auto state2 = ranks[1]->save_state();
  for (uint32_t r = 0; r < 2; ++r) ranks[r]->reslot(testing::slot(r, 4, 1));
  for (uint32_t r = 2; r < 4; ++r) {
    ranks.push_back(std::make_unique<data::data_pipeline>(setup, testing::slot(r, 4, 1)));
    ranks.back()->restore_state(state2);
  }
  run_steps(ranks, 3, resized);
  return resized;
}

void check_same(const world_run& a, const world_run& b) {
  REQUIRE(a.keys.size() == b.keys.size());
  for (size_t s = 0; s < a.keys.size(); ++s) {
    CAPTURE(s);
    CHECK(a.keys[s] == b.keys[s]);
  }
  REQUIRE(a.by_index.size() == b.by_index.size());
  for (const auto& [i, batch] : a.by_index) {
    CAPTURE(i);
    REQUIRE(b.by_index.count(i) == 1);
    CHECK(batch == b.by_index.at(i));  // same samples in the same order, decoded the same
  }
}

// Counts member bytes read (reads larger than one tar header block), to show that a rank
// never reads the media of other ranks' samples.
struct counting_storage final : data::storage {
  std::shared_ptr<data::storage> inner = data::make_local_storage();
  mutable std::atomic<uint64_t> member_bytes{0}, header_reads{0};
  struct counted final : data::byte_source {
    std::unique_ptr<data::byte_source> src;
    std::atomic<uint64_t>* total;
    std::atomic<uint64_t>* headers;
    uint64_t size() const override { return src->size(); }
    size_t read_at(uint64_t offset, void* dst, size_t n) const override {
      const size_t got = src->read_at(offset, dst, n);
      if (n > data::tar_block_size) *total += got;
      else if (n == data::tar_block_size) ++*headers;  // list_tar reads one header block at a time
      return got;
    }
  };
  std::vector<std::string> list_shards(const std::string& uri) const override { return inner->list_shards(uri); }
  std::unique_ptr<data::byte_source> open(const std::string& path) const override {
    auto f = inner->open(path);
    if (!f) return nullptr;
    auto c = std::make_unique<counted>();
    c->src = std::move(f);
    c->total = &member_bytes;
    c->headers = &header_reads;
    return c;
  }
};

}  // namespace

TEST_CASE("the order core gives every world size the same samples per step") {
  for (auto strategy : {data::mix_strategy::balanced_by_weight, data::mix_strategy::fixed_weight}) {
    CAPTURE(int(strategy));
    std::map<uint32_t, std::vector<std::set<std::tuple<uint64_t, uint32_t, uint64_t>>>> steps;
    for (uint32_t world : {1u, 2u, 4u}) {
      std::vector<data::order_core> cores;
      for (uint32_t r = 0; r < world; ++r)
        cores.emplace_back(data::mixer_core({2, 1, 1}, strategy, 5), data::order_slot{r, world, accum_for(world), 4});
      for (int s = 0; s < 12; ++s) {
        std::set<std::tuple<uint64_t, uint32_t, uint64_t>> entries;
        for (uint32_t r = 0; r < world; ++r)
          for (int64_t k = 0; k < accum_for(world); ++k)
            for (int j = 0; j < 4; ++j) {
              const auto e = cores[r].next();
              // micro-step k of step s on rank r takes s*G + (k*world + r)*4 + [0, 4)
              CHECK(e.global == uint64_t(s) * 16 + uint64_t(k * world + r) * 4 + uint64_t(j));
              entries.emplace(e.global, e.source, e.draw);
            }
        CHECK(entries.size() == 16);
        steps[world].push_back(entries);
      }
      for (uint32_t r = 1; r < world; ++r) CHECK(cores[r].boundary() == cores[0].boundary());
      CHECK(cores[0].micro_done() == 0);
    }
    CHECK(steps[1] == steps[2]);
    CHECK(steps[1] == steps[4]);
  }
}

TEST_CASE("the order core restores mid-step and refuses a position past the step") {
  data::order_core a(data::mixer_core({1, 3}, data::mix_strategy::balanced_by_weight, 1), {1, 2, 3, 2});
  std::vector<data::order_entry> seen;
  for (int i = 0; i < 10; ++i) seen.push_back(a.next());  // one step is 6 entries: 4 into the second
  CHECK(a.micro_done() == 2);
  data::order_core b(data::mixer_core({1, 3}, data::mix_strategy::balanced_by_weight, 1), {1, 2, 3, 2});
  b.restore(a.boundary(), a.micro_done());
  for (int i = 0; i < 8; ++i) CHECK(b.next() == a.next());
  CHECK_THROWS_AS(b.restore(a.boundary(), 3), std::invalid_argument);
}

TEST_CASE("each optimizer step takes the same samples with 1 2 and 4 ranks") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  const auto setup = data::make_pipeline_setup(job);
  constexpr int steps = 12;  // 192 samples: every source crosses an epoch end
  const world_run one = static_run(setup, 1, steps), two = static_run(setup, 2, steps), four = static_run(setup, 4, steps);
  check_same(one, two);
  check_same(one, four);
  // Weights 2:1:1: the mix is fixed by the seed, so every step of 16 holds 8 images.
  for (const auto& step : one.keys) CHECK(step.size() == 16);
  // A different seed gives a different order.
  job.training.seed = 100;
  const world_run other = static_run(data::make_pipeline_setup(job), 2, 2);
  CHECK(other.keys[0] != one.keys[0]);
}

TEST_CASE("a run resized 4 to 2 to 4 at step boundaries sees the samples of a static run") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  const auto setup = data::make_pipeline_setup(testing::tiny_job(dir.path()));
  const world_run reference = static_run(setup, 1, 9);

  check_same(reference, resized_4_2_4(setup));
}

TEST_CASE("a checkpoint of 4 ranks resumes on 2 and a mid-step resize is refused") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  const auto setup = data::make_pipeline_setup(testing::tiny_job(dir.path()));
  const world_run reference = static_run(setup, 1, 6);

  world_run resumed;
  auto four = make_world(setup, 4);
  run_steps(four, 2, resumed);
  const auto state = four[2]->save_state();
  four.clear();
  auto two = make_world(setup, 2);
  for (auto& p : two) p->restore_state(state);
  run_steps(two, 4, resumed);
  check_same(reference, resumed);

  // Half a step in (grad_accum 2, one micro-batch taken) the position is this slot's alone.
  auto& p = *two[0];
  p.next_batch();
  CHECK(data::decode_position(p.save_state()).micro == 1);
  CHECK_THROWS_AS(p.reslot(testing::slot(0, 4, 1)), std::logic_error);
  data::data_pipeline other(setup, testing::slot(0, 4, 1));
  CHECK_THROWS_AS(other.restore_state(p.save_state()), std::invalid_argument);
  // A slot whose micro_batch is not the configured batch size is refused.
  CHECK_THROWS_AS(data::data_pipeline(setup, {0, 2, 4, 2}), std::invalid_argument);
}

TEST_CASE("bad samples are replaced and counted the same way at every world size") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  {
    // A fifth image shard: two good samples, two corrupt JPEGs, one without a caption.
    data::tar_writer w((dir.path() / "images" / "zz-damaged.tar").string());
    const std::string junk = "\xff\xd8 not really a jpeg \xff\xd9";
    const std::string caption = "a caption";
    auto bytes = [](const std::string& s) { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
    data::tar_writer* out = &w;  // NOLINT: the same writer, named for the additions below
    // Good samples: reuse a generated shard's first JPEG.
    const auto listing = data::list_tar(*data::make_local_storage()->open((dir.path() / "images" / "shard-000000.tar").string()));
    std::vector<uint8_t> good;
    for (const auto& m : listing.members)
      if (m.name.ends_with(".jpg")) {
        good.resize(m.size);
        data::make_local_storage()->open((dir.path() / "images" / "shard-000000.tar").string())->read_at(m.data_offset, good.data(), m.size);
        break;
      }
    REQUIRE_FALSE(good.empty());
    out->add("g1.jpg", good);
    out->add("g1.txt", bytes(caption));
    out->add("b1.jpg", bytes(junk));
    out->add("b1.txt", bytes(caption));
    out->add("b2.jpg", bytes(junk));
    out->add("b2.txt", bytes(caption));
    out->add("m1.jpg", good);
    out->add("g2.jpg", good);
    out->add("g2.txt", bytes(caption));
    w.finish();
  }
  const auto setup = data::make_pipeline_setup(testing::tiny_job(dir.path()));
  constexpr int steps = 12;  // 96 image draws of 45 per epoch: the damaged shard at least twice
  const world_run one = static_run(setup, 1, steps), two = static_run(setup, 2, steps), four = static_run(setup, 4, steps);
  check_same(one, two);
  check_same(one, four);
  const uint64_t corrupt = one.bad[data::bad_reason::corrupt_image], missing = one.bad[data::bad_reason::missing_member];
  CHECK(corrupt >= 4);  // two per epoch, each counted once, by the rank owning its slot
  CHECK(missing >= 2);
  CHECK(corrupt == 2 * missing);
  for (const auto* r : {&two, &four}) {
    CHECK((*r).bad[data::bad_reason::corrupt_image] == one.bad[data::bad_reason::corrupt_image]);
    CHECK((*r).bad[data::bad_reason::missing_member] == one.bad[data::bad_reason::missing_member]);
  }
  uint64_t replaced = 0;
  for (const auto& [i, b] : one.by_index) {
    for (const auto& k : b.keys) CHECK(k.find("zz-damaged.tar/b") == std::string::npos);
    for (auto x : b.replaced) replaced += x;
  }
  CHECK(replaced == corrupt + missing);
}

TEST_CASE("a rank reads the media of its own samples only") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  const auto setup = data::make_pipeline_setup(testing::tiny_job(dir.path()));
  auto one = std::make_shared<counting_storage>();
  auto four = std::make_shared<counting_storage>();
  {
    world_run r1, r4;
    auto w1 = make_world(setup, 1, one);
    run_steps(w1, 4, r1);
    std::vector<std::unique_ptr<data::data_pipeline>> rank0;
    rank0.push_back(std::make_unique<data::data_pipeline>(setup, testing::slot(0, 4, 1), four));
    for (int s = 0; s < 4; ++s) rank0[0]->next_batch();
  }
  MESSAGE("member bytes read: 1 rank " << one->member_bytes.load() << ", rank 0 of 4 " << four->member_bytes.load());
  REQUIRE(one->member_bytes > 0);
  // Rank 0 of 4 decodes a quarter of the samples; read-ahead may add a little.
  CHECK(double(four->member_bytes) < 0.5 * double(one->member_bytes));
}

TEST_CASE("a fetcher walks no tar header the source index walked at start") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  const auto setup = data::make_pipeline_setup(testing::tiny_job(dir.path()));
  auto st = std::make_shared<counting_storage>();
  const auto sources = data::index_sources(setup, *st);
  const uint64_t walked = st->header_reads;
  REQUIRE(walked > 0);
  data::sample_fetcher fetcher(sources, st);
  uint64_t read = 0;
  for (uint32_t s = 0; s < sources->size(); ++s)
    for (uint64_t d = 0; d < 2 * (*sources)[s].samples_per_epoch(); ++d, ++read) CHECK_FALSE(fetcher.read(s, d, true).bad);
  CHECK(read > 0);
  CHECK(st->header_reads == walked);  // two epochs of every source, every shard opened twice
}

TEST_CASE("the step balancer places every sample once, equal counts per rank, and evens the predicted work") {
  // A step of 16: two expensive videos, four images, ten captions.
  std::vector<double> costs(16, 1.0);
  costs[0] = costs[1] = 20.0;
  for (size_t i = 2; i < 6; ++i) costs[i] = 6.0;
  for (uint32_t world : {1u, 2u, 4u}) {
    CAPTURE(world);
    const int64_t accum = accum_for(world);
    const auto balanced = data::balance_step(costs, world, accum, 4);
    const auto dealt = data::deal_step(world, accum, 4);
    std::multiset<uint64_t> seen;
    for (const auto& mine : balanced) {
      CHECK(mine.size() == size_t(accum * 4));
      seen.insert(mine.begin(), mine.end());
      // Similar lengths together: each rank's samples from the most to the least expensive.
      for (size_t i = 1; i < mine.size(); ++i) CHECK(costs[mine[i - 1]] >= costs[mine[i]]);
    }
    CHECK(seen.size() == 16);
    CHECK(std::set<uint64_t>(seen.begin(), seen.end()).size() == 16);
    CHECK(data::predicted_imbalance(costs, balanced) <= data::predicted_imbalance(costs, dealt));
    if (world == 2) {
      CHECK(data::predicted_imbalance(costs, dealt) > 1.4);  // both videos fall on rank 0 when dealt
      CHECK(data::predicted_imbalance(costs, balanced) == doctest::Approx(1.0));
    }
  }
  CHECK_THROWS_AS(data::balance_step(costs, 3, 1, 4), std::invalid_argument);  // 16 is no 3 x 4
}

TEST_CASE("balanced steps keep every world size's samples per step, and resume mid-step") {
  const auto cost = std::make_shared<const data::draw_cost>(
      [](uint32_t source, uint64_t draw) { return source == 0 ? 10.0 + double(draw % 3) : double(1 + draw % 5); });
  std::map<uint32_t, std::vector<std::set<std::tuple<uint64_t, uint32_t, uint64_t>>>> steps;
  for (uint32_t world : {1u, 2u, 4u}) {
    std::vector<data::order_core> cores;
    for (uint32_t r = 0; r < world; ++r)
      cores.emplace_back(data::mixer_core({2, 1, 1}, data::mix_strategy::balanced_by_weight, 5),
                         data::order_slot{r, world, accum_for(world), 4}, cost);
    for (int s = 0; s < 12; ++s) {
      std::set<std::tuple<uint64_t, uint32_t, uint64_t>> entries;
      for (uint32_t r = 0; r < world; ++r)
        for (int i = 0; i < accum_for(world) * 4; ++i) {
          const auto e = cores[r].next();
          entries.emplace(e.global, e.source, e.draw);
        }
      CHECK(entries.size() == 16);
      steps[world].push_back(entries);
    }
    for (uint32_t r = 1; r < world; ++r) CHECK(cores[r].boundary() == cores[0].boundary());
  }
  CHECK(steps[1] == steps[2]);
  CHECK(steps[1] == steps[4]);
  data::order_core a(data::mixer_core({1, 3}, data::mix_strategy::balanced_by_weight, 1), {1, 2, 3, 2}, cost);
  for (int i = 0; i < 10; ++i) a.next();
  data::order_core b(data::mixer_core({1, 3}, data::mix_strategy::balanced_by_weight, 1), {1, 2, 3, 2}, cost);
  b.restore(a.boundary(), a.micro_done());
  for (int i = 0; i < 8; ++i) CHECK(b.next() == a.next());
}

TEST_CASE("a balanced run resized 4 to 2 to 4 sees the samples of a static run, step by step") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  job.data.balance = "steps";
  const auto setup = data::make_pipeline_setup(job);
  REQUIRE(setup.balance_steps);
  const world_run reference = static_run(data::make_pipeline_setup(testing::tiny_job(dir.path())), 1, 9);
  const world_run resized = resized_4_2_4(setup);
  // The same samples in every step as an unbalanced static run: only their places changed.
  REQUIRE(resized.keys.size() == reference.keys.size());
  for (size_t s = 0; s < reference.keys.size(); ++s) CHECK(resized.keys[s] == reference.keys[s]);
}
