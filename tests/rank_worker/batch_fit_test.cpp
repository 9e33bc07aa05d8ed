// Making a micro-batch fit a memory forecast: the plan (fewest parts within the activation
// allowance, keyframe cuts only for a video that does not fit alone), the parts (every sample
// exactly once, its patches and text unchanged), the gradient of the parts (the unsplit one),
// and the rank's inbox of fit requests.
#include "batch_fit.hpp"
#include "fit_inbox.hpp"
#include "fuyu_tiny/fuyu_tiny.hpp"
#include "models/square_batches.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace msomni;
using rank_worker::fit_plan;

namespace {

// Activations as rows x seq_len^2: a stand-in with the attention's growth.
int64_t quadratic(int64_t rows, int64_t seq_len) { return rows * seq_len * seq_len; }

struct fixture {
  config::model_section cfg = test::tiny_model_config();
  test::square_batches data{cfg, 4, 24, 11};  // image, video, text, image
  model::micro_batch batch = data.next();
};

int64_t seq_len_of(const model::micro_batch& mb) { return mb.max_patches + mb.text_len; }

// Sample b's own text positions (up to its last token that is not padding).
int64_t own_text(const model::micro_batch& mb, int64_t b) {
  for (int64_t t = mb.text_len; t > 1; --t)
    if (mb.tokens[static_cast<size_t>(b * mb.text_len + t - 1)] != model::token_pad) return t;
  return 1;
}

}  // namespace

TEST_CASE("a micro-batch within its allowance runs as it is") {
  fixture f;
  const auto plan = rank_worker::plan_fit(f.batch, 1e12, 1e12, quadratic, f.data.patches_per_frame());
  CHECK_FALSE(plan.changed());
  REQUIRE(plan.parts.size() == 1);
  CHECK(plan.parts[0] == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(plan.fits);
  CHECK(rank_worker::describe(plan) == "as is");
}

TEST_CASE("a micro-batch over its allowance runs as the fewest parts that fit, each sample once") {
  fixture f;
  const int64_t whole = quadratic(f.batch.batch, seq_len_of(f.batch));
  const auto plan = rank_worker::plan_fit(f.batch, static_cast<double>(whole) * 0.6, 0, quadratic, f.data.patches_per_frame());
  REQUIRE(plan.changed());
  CHECK(plan.fits);
  CHECK(plan.keyframe_cuts.empty());
  CHECK(plan.parts.size() >= 2);
  const auto parts = rank_worker::split_micro_batch(f.batch, plan, std::pmr::get_default_resource());
  REQUIRE(parts.size() == plan.parts.size());
  std::vector<int64_t> seen;
  int64_t targets = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& part = parts[i];
    CHECK_NOTHROW(part.validate());
    CHECK(static_cast<double>(quadratic(part.batch, seq_len_of(part))) <= static_cast<double>(whole) * 0.6);
    targets += part.target_tokens();
    for (size_t r = 0; r < plan.parts[i].size(); ++r) {
      const int64_t b = plan.parts[i][r];
      seen.push_back(b);
      // The sample's patches and text are carried over unchanged.
      const int32_t count = f.batch.patch_counts[static_cast<size_t>(b)];
      CHECK(part.patch_counts[r] == count);
      CHECK(part.modalities[r] == f.batch.modalities[static_cast<size_t>(b)]);
      for (int64_t k = 0; k < count * f.batch.patch_dim; ++k)
        REQUIRE(part.patches[static_cast<size_t>(static_cast<int64_t>(r) * part.max_patches * part.patch_dim + k)] ==
                f.batch.patches[static_cast<size_t>(b * f.batch.max_patches * f.batch.patch_dim + k)]);
      for (int64_t t = 0; t < part.text_len; ++t) {
        REQUIRE(part.tokens[static_cast<size_t>(static_cast<int64_t>(r) * part.text_len + t)] ==
                f.batch.tokens[static_cast<size_t>(b * f.batch.text_len + t)]);
        REQUIRE(part.loss_mask[static_cast<size_t>(static_cast<int64_t>(r) * part.text_len + t)] ==
                f.batch.loss_mask[static_cast<size_t>(b * f.batch.text_len + t)]);
      }
    }
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(targets == f.batch.target_tokens());
  // The video (the longest sample) leads the first part.
  CHECK(std::find(plan.parts[0].begin(), plan.parts[0].end(), 1) != plan.parts[0].end());
}

TEST_CASE("a video over the device even alone is cut to its keyframe, one over the budget only is not, and a plan over even so says so") {
  fixture f;
  const int64_t ppf = f.data.patches_per_frame();
  REQUIRE(f.batch.patch_counts[1] == 2 * ppf);
  const int64_t video_alone = quadratic(1, f.batch.patch_counts[1] + own_text(f.batch, 1));
  const int64_t keyframe_alone = quadratic(1, ppf + own_text(f.batch, 1));
  // Over the budget alone but within the device: split, never cut (a cut changes the data).
  const auto kept = rank_worker::plan_fit(f.batch, static_cast<double>(video_alone - 1), static_cast<double>(video_alone),
                                          quadratic, ppf);
  CHECK(kept.keyframe_cuts.empty());
  CHECK_FALSE(kept.fits);
  CHECK(kept.parts.size() > 1);
  const auto cut = rank_worker::plan_fit(f.batch, static_cast<double>(video_alone - 1), 0, quadratic, ppf);
  REQUIRE(cut.keyframe_cuts == std::vector<int64_t>{1});
  CHECK(cut.fits);
  const auto parts = rank_worker::split_micro_batch(f.batch, cut, std::pmr::get_default_resource());
  for (size_t i = 0; i < cut.parts.size(); ++i)
    for (size_t r = 0; r < cut.parts[i].size(); ++r)
      if (cut.parts[i][r] == 1) CHECK(parts[i].patch_counts[r] == ppf);
  CHECK(rank_worker::describe(cut).find("1 video cut to the keyframe") != std::string::npos);

  const auto over = rank_worker::plan_fit(f.batch, static_cast<double>(keyframe_alone - 1), 0, quadratic, ppf);
  CHECK_FALSE(over.fits);
  CHECK(rank_worker::describe(over).find("still over the allowance") != std::string::npos);
}

TEST_CASE("a plan that names a sample twice or leaves one out is refused") {
  fixture f;
  fit_plan twice;
  twice.parts = {{0, 1}, {1, 2, 3}};
  CHECK_THROWS_WITH_AS(rank_worker::split_micro_batch(f.batch, twice, std::pmr::get_default_resource()),
                       doctest::Contains("sample 1 is in 2 parts"), std::invalid_argument);
  fit_plan missing;
  missing.parts = {{0, 1, 2}};
  CHECK_THROWS_WITH_AS(rank_worker::split_micro_batch(f.batch, missing, std::pmr::get_default_resource()),
                       doctest::Contains("sample 3 is in 0 parts"), std::invalid_argument);
}

TEST_CASE("the parts' gradients, each weighted by its share of the loss targets, are the micro-batch's") {
  fixture f;
  model::model_context ctx{f.cfg, 5, model::compute_device::cpu, 0, 2};
  models::fuyu_tiny m(ctx);
  const size_t n = static_cast<size_t>(m.parameter_count());
  auto activations = [&m](int64_t rows, int64_t seq_len) { return m.estimate_memory(rows, seq_len).activation_bytes; };
  const double whole_activations = static_cast<double>(activations(f.batch.batch, seq_len_of(f.batch)));
  const auto plan = rank_worker::plan_fit(f.batch, whole_activations * 0.5, 0, activations, f.data.patches_per_frame());
  REQUIRE(plan.parts.size() >= 2);
  REQUIRE(plan.keyframe_cuts.empty());

  std::vector<float> unsplit(n), split(n);
  m.zero_gradients();
  const auto full = m.forward_backward(f.batch, 0.5f);
  m.copy_to_host(model::buffer_role::gradients, unsplit);

  m.zero_gradients();
  double loss_sum = 0;
  const auto whole = static_cast<double>(f.batch.target_tokens());
  for (const auto& part : rank_worker::split_micro_batch(f.batch, plan, std::pmr::get_default_resource())) {
    const auto r = m.forward_backward(part, static_cast<float>(0.5 * static_cast<double>(part.target_tokens()) / whole));
    loss_sum += r.loss * static_cast<double>(r.target_tokens);
  }
  m.copy_to_host(model::buffer_role::gradients, split);
  CHECK(loss_sum / whole == doctest::Approx(full.loss).epsilon(1e-6));
  double largest = 0, diff = 0;
  for (size_t i = 0; i < n; ++i) {
    largest = std::max(largest, std::abs(static_cast<double>(unsplit[i])));
    diff = std::max(diff, std::abs(static_cast<double>(unsplit[i]) - split[i]));
  }
  REQUIRE(largest > 0);
  INFO("largest gradient " << largest << ", largest difference " << diff);
  CHECK(diff <= 1e-5 * largest);
}

TEST_CASE("the activation allowance keeps what the forecast holds beside the batch's activations") {
  rank_worker::fit_target t{1000.0, 800.0, 0, 0, 2, 10};
  // activations(2, 10) = 200: the forecast holds 800 beside them, the budget leaves 0.
  CHECK(rank_worker::activation_allowance(t, quadratic) == doctest::Approx(0.0));
  t.budget_bytes = 900;
  CHECK(rank_worker::activation_allowance(t, quadratic) == doctest::Approx(100.0));
  CHECK(rank_worker::cut_allowance(t, quadratic) == doctest::Approx(100.0));  // no device: the budget
  t.device_bytes = 950;  // a cut is judged against the device
  CHECK(rank_worker::cut_allowance(t, quadratic) == doctest::Approx(150.0));
  t.resident_bytes = 700;  // measured by the rank: it replaces the forecast's share
  CHECK(rank_worker::activation_allowance(t, quadratic) == doctest::Approx(200.0));
  t.resident_bytes = 880;
  CHECK(rank_worker::activation_allowance(t, quadratic) == doctest::Approx(20.0));
  t.resident_bytes = 0;
  t.forecast_bytes = 100;  // below the activations alone: nothing beside them
  CHECK(rank_worker::activation_allowance(t, quadratic) == doctest::Approx(900.0));
}

TEST_CASE("the fit inbox keeps one request per step, lets a replay decide, and is bounded") {
  rank_worker::fit_inbox inbox(3);
  auto fit = [](uint64_t step, bool replay, double forecast = 1.0) {
    msg::memory_fit f;
    f.rank_name = "rank-0";
    f.rank = 0;
    f.world_size = 2;
    f.step = step;
    f.forecast_bytes = forecast;
    f.replay = replay;
    return f;
  };
  inbox.push(fit(5, true, 7.0));
  inbox.push(fit(5, false, 9.0));  // the replay decides
  inbox.push(fit(6, false, 1.0));
  inbox.push(fit(6, false, 2.0));  // a newer live one replaces
  inbox.push(fit(8, false));
  inbox.push(fit(9, false));  // over capacity: the farthest step goes
  CHECK(inbox.totals().superseded == 1);
  CHECK(inbox.totals().dropped == 1);
  const auto at5 = inbox.take(5, 0, 2);
  REQUIRE(at5);
  CHECK(at5->forecast_bytes == 7.0);
  CHECK(at5->replay);
  CHECK_FALSE(inbox.take(6, 1, 2));  // another slot's: stale
  CHECK(inbox.totals().stale == 1);
  CHECK_FALSE(inbox.take(7, 0, 2));
  CHECK(inbox.take(8, 0, 2));
  CHECK(inbox.totals().taken == 2);
}
