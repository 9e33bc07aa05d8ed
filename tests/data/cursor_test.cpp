// Acceptance: the data cursor. Read K batches, save the state, restore it in a fresh
// pipeline, and the following batches equal an uninterrupted read, including restarts
// placed so that sources cross epoch boundaries after the restore.
#include "data_test_support.hpp"
#include "pipeline_state.hpp"

#include <doctest/doctest.h>


using namespace msomni;

namespace {

std::vector<data::micro_batch> read_batches(data::data_pipeline& p, size_t n) {
  std::vector<data::micro_batch> out;
  for (size_t i = 0; i < n; ++i) out.push_back(p.next_batch());
  return out;
}

}  // namespace

TEST_CASE("restoring a saved cursor continues exactly like an uninterrupted read across epochs") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  const auto setup = data::make_pipeline_setup(testing::tiny_job(dir.path()));
  constexpr size_t total = 36;  // 144 samples: text (24) and videos (12) wrap around 1-3 times

  data::data_pipeline reference(setup, testing::slot(0, 1));
  const auto expected = read_batches(reference, total);
  const auto final_position = reference.cursors();
  for (const auto& c : final_position) CHECK_MESSAGE(c.epoch >= 1, c.source << " never reached a second epoch");

  bool restarted_before_a_boundary = false;
  for (size_t k : {1u, 7u, 13u, 20u, 29u}) {
    CAPTURE(k);
    data::data_pipeline first(setup, testing::slot(0, 1));
    const auto head = read_batches(first, k);
    for (size_t i = 0; i < k; ++i) REQUIRE(head[i] == expected[i]);
    const std::vector<uint8_t> state = first.save_state();

    data::data_pipeline resumed(setup, testing::slot(0, 1));
    resumed.restore_state(state);
    const auto position = resumed.cursors();
    for (size_t s = 0; s < position.size(); ++s)
      if (position[s].epoch < final_position[s].epoch) restarted_before_a_boundary = true;
    const auto tail = read_batches(resumed, total - k);
    for (size_t i = 0; i < tail.size(); ++i) {
      CAPTURE(i);
      REQUIRE(tail[i].index == expected[k + i].index);
      REQUIRE(tail[i].keys == expected[k + i].keys);
      CHECK(tail[i].patches == expected[k + i].patches);
      CHECK(tail[i].tokens == expected[k + i].tokens);
      CHECK(tail[i].downgraded == expected[k + i].downgraded);
      CHECK(tail[i].patch_mask == expected[k + i].patch_mask);
      REQUIRE(tail[i] == expected[k + i]);
    }
  }
  CHECK(restarted_before_a_boundary);
}

TEST_CASE("the same seed gives the same batches and another seed a different shuffle") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  auto job = testing::tiny_job(dir.path());
  data::data_pipeline a(data::make_pipeline_setup(job), testing::slot(0, 1)), b(data::make_pipeline_setup(job), testing::slot(0, 1));
  job.training.seed = 100;
  data::data_pipeline c(data::make_pipeline_setup(job), testing::slot(0, 1));
  bool differs = false;
  for (int i = 0; i < 8; ++i) {
    const auto x = a.next_batch(), y = b.next_batch(), z = c.next_batch();
    CHECK(x == y);
    differs = differs || x.keys != z.keys;
  }
  CHECK(differs);
}

TEST_CASE("balanced_by_weight keeps the configured mix exactly in every batch window") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  data::data_pipeline p(data::make_pipeline_setup(testing::tiny_job(dir.path())), testing::slot(0, 1));
  std::array<int, modality_count> seen{};
  for (int i = 0; i < 10; ++i)
    for (auto k : p.next_batch().kinds) ++seen[size_t(k)];
  // Weights 2:1:1 over 40 samples.
  CHECK(seen[size_t(modality::image)] == 20);
  CHECK(seen[size_t(modality::video)] == 10);
  CHECK(seen[size_t(modality::text)] == 10);
}

TEST_CASE("a damaged state record is refused with a reason") {
  testing::temp_dir dir;
  gen::write_dataset(testing::tiny_dataset(dir.path()));
  data::data_pipeline p(data::make_pipeline_setup(testing::tiny_job(dir.path())), testing::slot(0, 1));
  p.next_batch();
  auto state = p.save_state();
  CHECK(data::decode_position(state) == p.position());
  state.resize(state.size() - 3);
  CHECK_THROWS_WITH_AS(p.restore_state(state), doctest::Contains("data pipeline state"), std::invalid_argument);
}
