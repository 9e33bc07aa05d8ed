// Single-process training of fuyu-tiny on generated coloured-square batches: the loss must
// fall by at least half within a bounded number of steps, and two runs from the same seed
// must produce bit-identical losses. Also checkpoint state round trips bit-exactly.
#include "fuyu_tiny/fuyu_tiny.hpp"
#include "square_batches.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace msomni;

namespace {

struct run_result {
  std::vector<double> losses;
  model::model_state final_state;
};

model::optimizer_settings test_optimizer() {
  model::optimizer_settings s;
  s.lr = 3e-3;
  s.weight_decay = 0.01;
  s.grad_clip = 1.0;
  return s;
}

// `steps` optimizer steps of 2 accumulated micro-batches each, from a fresh model.
run_result train(uint64_t seed, int steps, int threads) {
  const auto cfg = test::tiny_model_config();
  models::fuyu_tiny m(model::model_context{cfg, seed, model::compute_device::cpu, 0, threads});
  test::square_batches data(cfg, 4, 24, seed);
  run_result r;
  for (int s = 0; s < steps; ++s) {
    m.zero_gradients();
    double loss = 0;
    for (int k = 0; k < 2; ++k) loss += m.forward_backward(data.next(), 0.5f).loss / 2;
    const auto rep = m.optimizer_step(test_optimizer());
    REQUIRE_FALSE(rep.skipped);
    r.losses.push_back(loss);
  }
  r.final_state = m.save_state();
  return r;
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + long(from), v.begin() + long(to), 0.0) / double(to - from);
}

}  // namespace

TEST_CASE("fuyu-tiny learns captions: loss falls by half within 60 steps, deterministically") {
  const auto a = train(42, 60, 2);
  const double first = mean(a.losses, 0, 5);
  const double last = mean(a.losses, a.losses.size() - 10, a.losses.size());
  MESSAGE("loss " << first << " -> " << last);
  CHECK(first > 4.0);  // about ln(260): the model starts knowing nothing
  CHECK(last <= 0.5 * first);
  const auto b = train(42, 60, 2);
  CHECK(a.losses == b.losses);  // bit for bit
  const auto c = train(43, 5, 2);
  CHECK(c.losses != std::vector<double>(a.losses.begin(), a.losses.begin() + 5));
}

TEST_CASE("fuyu-tiny state round trip resumes bit-exactly") {
  const auto cfg = test::tiny_model_config();
  const model::model_context ctx{cfg, 5, model::compute_device::cpu, 0, 2};
  test::square_batches data(cfg, 4, 24, 5);
  std::vector<model::micro_batch> batches;
  for (int i = 0; i < 8; ++i) batches.push_back(data.next());

  models::fuyu_tiny a(ctx);
  auto step = [](models::fuyu_tiny& m, const model::micro_batch& mb) {
    m.zero_gradients();
    const double loss = m.forward_backward(mb, 1.0f).loss;
    m.optimizer_step(test_optimizer());
    return loss;
  };
  for (int i = 0; i < 4; ++i) step(a, batches[i]);
  const auto saved = a.save_state();
  std::vector<double> continued;
  for (int i = 4; i < 8; ++i) continued.push_back(step(a, batches[i]));

  models::fuyu_tiny b(model::model_context{cfg, 999, model::compute_device::cpu, 0, 2});
  b.load_state(saved);
  std::vector<double> resumed;
  for (int i = 4; i < 8; ++i) resumed.push_back(step(b, batches[i]));
  CHECK(resumed == continued);
  int64_t steps = 0;
  REQUIRE(b.save_state().get_int64("optimizer/step", steps));
  CHECK(steps == 8);

  auto broken = saved;
  broken.tensors.erase(broken.tensors.begin() + 3);
  CHECK_THROWS_WITH_AS(b.load_state(broken), doctest::Contains("missing tensor"),
                       std::invalid_argument);
  auto other_cfg = cfg;
  other_cfg.d_model = 64;
  models::fuyu_tiny wide(model::model_context{other_cfg, 5, model::compute_device::cpu, 0, 2});
  CHECK_THROWS_WITH_AS(wide.load_state(saved), doctest::Contains("d_model=32"),
                       std::invalid_argument);
}

TEST_CASE("fuyu-tiny refuses impossible configs and batches with the reason") {
  auto build = [](const config::model_section& c) {
    models::fuyu_tiny m(model::model_context{c, 1, model::compute_device::cpu, 0, 1});
  };
  auto cfg = test::tiny_model_config();
  cfg.n_heads = 3;
  CHECK_THROWS_WITH_AS(build(cfg), doctest::Contains("divisible by model.n_heads"),
                       std::invalid_argument);
  cfg = test::tiny_model_config();
  cfg.max_seq_len = 20;
  CHECK_THROWS_WITH_AS(build(cfg), doctest::Contains("model.max_seq_len"), std::invalid_argument);

  cfg = test::tiny_model_config();
  models::fuyu_tiny m(model::model_context{cfg, 1, model::compute_device::cpu, 0, 2});
  test::square_batches data(cfg, 3, 40, 1);  // 32 patches + 40 text > max_seq_len 64
  CHECK_THROWS_WITH_AS(m.forward_backward(data.next(), 1.0f),
                       doctest::Contains("exceeds model.max_seq_len"), std::invalid_argument);
  test::square_batches ok(cfg, 3, 24, 1);
  auto mb = ok.next();
  mb.tokens[5] = 300;
  CHECK_THROWS_WITH_AS(m.forward_backward(mb, 1.0f), doctest::Contains("outside the vocabulary"),
                       std::invalid_argument);
  mb = ok.next();
  mb.patch_counts[0] = 3;  // not a whole frame
  CHECK_THROWS_WITH_AS(m.forward_backward(mb, 1.0f), doctest::Contains("whole frames"),
                       std::invalid_argument);
}

TEST_CASE("fuyu-tiny memory estimate counts state and grows with the batch") {
  const auto cfg = test::tiny_model_config();
  models::fuyu_tiny m(model::model_context{cfg, 1, model::compute_device::cpu, 0, 1});
  const auto small = m.estimate_memory(2, 56);
  const auto big = m.estimate_memory(4, 56);
  CHECK(small.parameter_bytes == 4 * m.parameter_count());
  CHECK(small.optimizer_bytes == 2 * small.parameter_bytes);
  CHECK(big.activation_bytes > small.activation_bytes);
  CHECK(big.activation_bytes < 2 * small.activation_bytes + 4096);
  CHECK(small.total() > 4 * small.parameter_bytes);
}
