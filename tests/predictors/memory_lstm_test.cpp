// The LSTM + attention network: its manual gradient against finite differences, that
// training lowers its loss on a learnable sequence, and the online predictor built on it.
#include "memory_lstm.hpp"
#include "memory_lstm_predictor.hpp"
#include "sawtooth_trace.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace msomni::predict;

namespace {

std::vector<double> inputs(size_t steps, size_t dims, double phase) {
  std::vector<double> xs;
  for (size_t t = 0; t < steps; ++t)
    for (size_t j = 0; j < dims; ++j) xs.push_back(std::sin(phase + 0.9 * static_cast<double>(t) + 1.7 * static_cast<double>(j)));
  return xs;
}

}  // namespace

TEST_CASE("the lstm's backward pass matches finite differences") {
  lstm_attention_net net(3, 4, 2, 7);
  const auto xs = inputs(5, 3, 0.3);
  const std::vector<double> targets{0.4, -0.8};
  const std::vector<bool> mask{true, true};
  std::vector<double> grad(net.parameters().size(), 0.0), scratch;
  net.loss_and_gradient(xs, targets, mask, grad);
  const double h = 1e-6;
  double worst = 0;
  for (size_t k = 0; k < net.parameters().size(); ++k) {
    const double keep = net.parameters()[k];
    net.parameters()[k] = keep + h;
    scratch.assign(grad.size(), 0.0);
    const double up = net.loss_and_gradient(xs, targets, mask, scratch);
    net.parameters()[k] = keep - h;
    scratch.assign(grad.size(), 0.0);
    const double down = net.loss_and_gradient(xs, targets, mask, scratch);
    net.parameters()[k] = keep;
    const double numeric = (up - down) / (2 * h);
    worst = std::max(worst, std::abs(numeric - grad[k]) / std::max(1e-4, std::abs(numeric) + std::abs(grad[k])));
  }
  CHECK(worst < 1e-5);
  // A masked output contributes nothing.
  std::vector<double> g1(grad.size(), 0.0);
  const std::vector<bool> first_only{true, false};
  const std::vector<double> other{0.4, 100.0};
  const double l1 = net.loss_and_gradient(xs, other, first_only, g1);
  std::vector<double> g2(grad.size(), 0.0);
  const std::vector<double> other2{0.4, -100.0};
  CHECK(net.loss_and_gradient(xs, other2, first_only, g2) == l1);
  CHECK(g1 == g2);
}

TEST_CASE("training lowers the lstm's loss on a learnable sequence") {
  // Targets: the mean of the first input over the sequence and the last step's second input.
  lstm_attention_net net(2, 8, 2, 3);
  std::vector<std::vector<double>> xs, ys;
  for (int e = 0; e < 16; ++e) {
    auto x = inputs(6, 2, 0.5 * e);
    double mean = 0;
    for (size_t t = 0; t < 6; ++t) mean += x[t * 2] / 6;
    xs.push_back(x);
    ys.push_back({mean, x[5 * 2 + 1]});
  }
  const std::vector<bool> mask{true, true};
  auto total_loss = [&] {
    double l = 0;
    std::vector<double> g(net.parameters().size(), 0.0);
    for (size_t e = 0; e < xs.size(); ++e) l += net.loss_and_gradient(xs[e], ys[e], mask, g);
    return l / static_cast<double>(xs.size());
  };
  const double before = total_loss();
  adam_settings a;
  a.learning_rate = 1e-2;
  for (int it = 0; it < 400; ++it) {
    std::vector<double> g(net.parameters().size(), 0.0);
    for (size_t e = 0; e < xs.size(); ++e) net.loss_and_gradient(xs[e], ys[e], mask, g);
    for (auto& v : g) v /= static_cast<double>(xs.size());
    net.adam_step(g, a);
  }
  const double after = total_loss();
  MESSAGE("loss before " << before << ", after " << after);
  CHECK(after < 0.1 * before);
}

TEST_CASE("the online lstm predictor learns a saw tooth and is deterministic") {
  lstm_predictor_settings s;
  s.window = 120;
  s.horizon = 4;
  const auto trace = msomni::testing::sawtooth_trace(300);
  lstm_attention_predictor a(s), b(s);
  CHECK_FALSE(a.trained());
  double early = -1;
  for (const auto& x : trace) {
    a.observe(x);
    b.observe(x);
    if (a.trained() && early < 0) early = a.last_loss();
  }
  REQUIRE(a.trained());
  CHECK(a.pca().dims_out == 16);
  const std::vector<batch_features> up{msomni::testing::sawtooth_batch(300), msomni::testing::sawtooth_batch(301)};
  const auto fa = a.forecast(6, up), fb = b.forecast(6, up);
  CHECK(fa.peak_bytes == fb.peak_bytes);
  REQUIRE(fa.peak_bytes.size() == 6);
  // The learned correction is small next to the feature estimate it corrects.
  const double truth = static_cast<double>(msomni::testing::sawtooth_peak_bytes(up[0], 300));
  MESSAGE("first loss " << early << ", last loss " << a.last_loss() << ", forecast " << fa.peak_bytes[0]
                        << " truth " << truth);
  CHECK(std::abs(fa.peak_bytes[0] - truth) < 0.05 * truth);

  // The same on the peak itself, without the ridge underneath: it has to learn the shape.
  s.target = lstm_target::peak;
  lstm_attention_predictor direct(s);
  std::vector<double> losses;
  for (const auto& x : trace) {
    direct.observe(x);
    if (direct.trained()) losses.push_back(direct.last_loss());
  }
  REQUIRE(losses.size() > 60);
  double first = 0, last = 0;
  for (size_t i = 0; i < 30; ++i) first += losses[i] / 30, last += losses[losses.size() - 1 - i] / 30;
  MESSAGE("peak target: mean loss of the first 30 trained steps " << first << ", of the last 30 " << last);
  CHECK(last < 0.5 * first);
}
