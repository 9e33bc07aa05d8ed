// Step-time predictor core: ring bounds, statistics, lendable share and checkpoint windows.
#include "guest_cost_meter.hpp"
#include "step_predictor.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace msomni::predict;

TEST_CASE("idle share counts waits and the bubble part of compute") {
  CHECK(idle_share({10, 2, 0, 0}) == doctest::Approx(0.2));
  CHECK(idle_share({10, 2, 0, 0.25}) == doctest::Approx(0.2 + 0.8 * 0.25));
  CHECK(idle_share({10, 20, 0, 0}) == doctest::Approx(1.0));  // clamped
  CHECK(idle_share({0, 1, 0, 0}) == 0);
}

TEST_CASE("the ring keeps only the newest samples") {
  step_ring r(3);
  for (int i = 1; i <= 5; ++i) r.push({double(i), 0, 0, 0});
  CHECK(r.size() == 3);
  CHECK(r.total_pushed() == 5);
  CHECK(r.at(0).step_s == 3);
  CHECK(r.at(2).step_s == 5);
  CHECK_THROWS(r.at(3));
}

TEST_CASE("steady jobs get a lendable share near their idle mean and noisy ones less") {
  step_predictor p({200, 2.0, 8, 16});
  for (int i = 0; i < 200; ++i) {
    p.observe("steady", {30, 6, 0, 0.25});                      // idle 0.2 + 0.8*0.25 = 0.4
    p.observe("noisy", {30, (i % 2) ? 0.0 : 12.0, 0, 0.25});    // idle alternates 0.25 / 0.55
  }
  auto s = p.forecast("steady", 60);
  auto n = p.forecast("noisy", 60);
  CHECK(s.idle_mean == doctest::Approx(0.4));
  CHECK(s.lendable_share == doctest::Approx(0.4));
  CHECK(s.confidence == doctest::Approx(1.0));
  CHECK(n.idle_mean == doctest::Approx(0.4));
  CHECK(n.lendable_share < s.lendable_share);
  CHECK(n.lendable_share > 0.0);
  CHECK(p.stats("noisy").step_std_s == doctest::Approx(0.0));
}

TEST_CASE("confidence grows with history and unknown jobs lend nothing") {
  step_predictor p({200, 2.0, 8, 16, 30});
  CHECK(p.forecast("nobody", 60).lendable_share == 0);
  for (int i = 0; i < 15; ++i) p.observe("j", {30, 6, 0, 0});
  CHECK(p.forecast("j", 60).confidence == doctest::Approx(0.5));  // half the warm-up
  for (int i = 0; i < 50; ++i) p.observe("j", {30, 6, 0, 0});
  CHECK(p.forecast("j", 60).confidence == doctest::Approx(1.0));
}

TEST_CASE("a short history lends less: the margin covers the uncertainty of the mean") {
  step_predictor p({200, 2.0, 8, 16});
  for (int i = 0; i < 200; ++i) {
    if (i < 20) p.observe("young", {30, (i % 2) ? 0.0 : 12.0, 0, 0.25});
    p.observe("old", {30, (i % 2) ? 0.0 : 12.0, 0, 0.25});
  }
  auto young = p.forecast("young", 1800), old = p.forecast("old", 1800);
  CHECK(young.idle_mean == doctest::Approx(old.idle_mean));
  CHECK(young.idle_std > old.idle_std);
  CHECK(young.lendable_share < old.lendable_share);
}

TEST_CASE("the rhythm's idle share counts checkpoint phases at their observed rate") {
  step_predictor p({200, 2.0, 8, 16});
  // 10 s steps, 2 s of data wait (idle 0.2), and a 120 s phase every 20 steps.
  for (int i = 0; i < 100; ++i) p.observe("j", {10, 2, (i % 20 == 19) ? 120.0 : 0.0, 0});
  auto f = p.forecast("j", 60);
  CHECK(f.idle_mean == doctest::Approx(0.2));
  const double phase = 120.0 / (20 * 10 + 120);
  CHECK(f.rhythm_idle == doctest::Approx(phase + (1 - phase) * 0.2));
  // No phase seen: the rhythm is the ordinary steps.
  for (int i = 0; i < 50; ++i) p.observe("plain", {10, 2, 0, 0});
  CHECK(p.forecast("plain", 60).rhythm_idle == doctest::Approx(0.2));
}

TEST_CASE("checkpoint phases become predicted idle windows") {
  step_predictor p({200, 2.0, 8, 16});
  for (int i = 0; i < 100; ++i) p.observe("j", {10, 0, (i % 20 == 19) ? 120.0 : 0.0, 0});
  // Last checkpoint was the newest step (i = 99): the next is 20 steps of ~mean away.
  auto f = p.forecast("j", 1000);
  REQUIRE(!f.windows.empty());
  CHECK(p.stats("j").checkpoint_every_steps == doctest::Approx(20));
  CHECK(f.windows.front().length_s == doctest::Approx(120));
  CHECK(f.windows.front().start_in_s == doctest::Approx(20 * p.stats("j").step_mean_s));
}

TEST_CASE("the part of a window a predicted phase surely covers is its phase share") {
  step_predictor p({200, 2.0, 8, 16});
  for (int i = 0; i < 100; ++i) p.observe("j", {10, 0, (i % 20 == 19) ? 120.0 : 0.0, 0});
  // The next phase starts 20 ordinary steps (200 s) after the newest (checkpoint) step.
  CHECK(p.forecast("j", 60, 0).phase_share == 0);                                  // 200 s away
  CHECK(p.forecast("j", 60, 150).phase_share == doctest::Approx(10.0 / 60));     // starts 50 s in
  CHECK(p.forecast("j", 60, 195).phase_share == doctest::Approx(55.0 / 60));     // starts 5 s in
  CHECK(p.forecast("j", 60, 195).windows.front().start_in_s == doctest::Approx(5));
  // With step-time noise the window is shrunk by 2 std x sqrt(20 steps) at both ends.
  step_predictor q({200, 2.0, 8, 16});
  for (int i = 0; i < 100; ++i) q.observe("j", {(i % 2) ? 9.0 : 11.0, 0, (i % 20 == 19) ? 120.0 : 0.0, 0});
  double margin = 2.0 * q.stats("j").step_std_s * std::sqrt(20.0);
  CHECK(margin > 5);
  CHECK(q.forecast("j", 60, 195).phase_share == doctest::Approx((60 - 5 - margin) / 60).epsilon(0.02));
}

TEST_CASE("the job table is bounded") {
  step_predictor p({10, 2.0, 2, 4});
  CHECK(p.observe("a", {1, 0, 0, 0}));
  CHECK(p.observe("b", {1, 0, 0, 0}));
  CHECK_FALSE(p.observe("c", {1, 0, 0, 0}));
  p.forget("a");
  CHECK(p.observe("c", {1, 0, 0, 0}));
  CHECK(p.jobs() == 2);
}

TEST_CASE("the guest-cost meter sums what hosted steps took beyond the job's steps alone") {
  guest_cost_meter m;
  // Data waits and phases are left out: a guest shares compute, not the input pipeline.
  for (int i = 0; i < 40; ++i) {
    const double wait = 10.0 + i % 2, phase = i == 7 ? 60.0 : 0.0;
    m.observe("crit", {20 + wait + phase, wait, phase, 0.2}, false);
  }
  CHECK(m.lost_s("crit") == 0);
  // 20 s of compute alone, 20.5 s with guests: half a second lost per hosted step.
  for (int i = 0; i < 100; ++i) m.observe("crit", {30.5, 10, 0, 0.2}, true);
  CHECK(m.hosted_steps("crit") == 100);
  CHECK(m.lost_s("crit") == doctest::Approx(50).epsilon(0.01));
  CHECK(m.lost_s("unknown") == 0);
}

TEST_CASE("the guest-cost meter lets step noise cancel and never reports a gain") {
  guest_cost_meter m;
  // Alternating +-3% around 20 s of compute, alone and hosted alike: no loss to speak of.
  for (int i = 0; i < 200; ++i) m.observe("j", {i % 2 ? 20.6 : 19.4, 0, 0, 0}, false);
  double sum_noise = 0;
  for (int i = 0; i < 1000; ++i) {
    double step = i % 2 ? 20.6 : 19.4;
    sum_noise += step - 20;
    m.observe("j", {step, 0, 0, 0}, true);
  }
  CHECK(sum_noise == doctest::Approx(0));
  CHECK(m.lost_s("j") < 1.0);  // of 20000 s hosted; summing only the slow steps would give 300 s
  // Faster with guests (a cooler GPU, say) is no credit: the loss stays at 0.
  guest_cost_meter fast;
  for (int i = 0; i < 10; ++i) fast.observe("j", {20, 0, 0, 0}, false);
  for (int i = 0; i < 10; ++i) fast.observe("j", {19, 0, 0, 0}, true);
  CHECK(fast.lost_s("j") == 0);
}

TEST_CASE("the guest-cost meter judges no hosted step before it has a baseline and is bounded") {
  guest_cost_meter m({2, 0.05, 5});
  for (int i = 0; i < 3; ++i) m.observe("a", {20, 0, 0, 0}, false);
  m.observe("a", {40, 0, 0, 0}, true);  // 3 steps alone are not yet a baseline
  CHECK(m.unjudged_steps("a") == 1);
  CHECK(m.hosted_steps("a") == 0);
  CHECK(m.lost_s("a") == 0);
  CHECK(m.observe("b", {20, 0, 0, 0}, false));
  CHECK_FALSE(m.observe("c", {20, 0, 0, 0}, false));
  m.forget("a");
  CHECK(m.observe("c", {20, 0, 0, 0}, false));
  CHECK(m.jobs() == 2);
}
