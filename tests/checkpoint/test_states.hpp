// Deterministic rank states for checkpoint tests: float tensors, RNG states and blobs that
// depend only on (seed, step, rank), so any process can recompute what a checkpoint of a
// given step must contain and compare bit for bit.
#pragma once

#include "rank_state.hpp"

#include <cstdint>
#include <string>

namespace msomni::ckpt::testing {

inline rank_state make_state(uint64_t seed, uint64_t step, uint32_t rank, size_t floats = 1024) {
  rank_state s;
  auto r = rng_stream::derive(seed ^ (step * 0x9e3779b97f4a7c15ull), "ckpt.test", rank);
  std::vector<float> w(floats), b(floats / 8 + 1), m(floats / 2 + 1);
  for (auto& x : w) x = r.normal();
  for (auto& x : b) x = static_cast<float>(r.uniform());
  for (auto& x : m) x = r.normal() * 1e-3f;
  s.put_tensor("param/layer0.w", {static_cast<int64_t>(floats / 32), 32}, std::move(w));
  s.put_tensor("param/layer0.b", {static_cast<int64_t>(floats / 8 + 1)}, std::move(b));
  s.put_tensor("optim/adam_m", {static_cast<int64_t>(floats / 2 + 1)}, std::move(m));
  s.put_u64("counter/step", step);
  s.put_u64("counter/micro_step", step * 4);
  s.put_rng("rng/cpu", rng_stream::derive(seed, "train.dropout", rank));
  s.put_rng("rng/data", r);
  std::vector<uint8_t> cursor(40 + rank);
  for (auto& c : cursor) c = static_cast<uint8_t>(r.next());
  s.put_blob("cursor/data", std::move(cursor));
  return s;
}

inline checkpoint_meta make_meta(uint64_t step, uint32_t world, uint64_t epoch = 1) {
  return {step, step * 4, world, 0x1234abcd5678ef00ull, epoch};
}

}  // namespace msomni::ckpt::testing
