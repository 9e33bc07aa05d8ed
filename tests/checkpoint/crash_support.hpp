// Shared by the crash and disk-full tests: start the helper writer process, and check the
// invariants a checkpoint root must satisfy after any crash.
#pragma once

#include "checkpoint_store.hpp"
#include "core/process.hpp"
#include "support/process_runner.hpp"
#include "test_states.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

namespace msomni::ckpt::testing {

constexpr uint64_t crash_seed = 20261201;
constexpr size_t crash_floats = 2048;

// Starts the helper with stdout to /dev/null.
inline process::child spawn_writer(const std::vector<std::string>& args) {
  process::spawn_options o;
  o.out = process::stream::null();
  o.own_process_group = false;
  return process::spawn(MSOMNI_CRASH_WRITER, args, o);
}

// After any crash: every committed directory loads in full and holds exactly the state its
// shards claim (each state names its own step); `latest`, when present, names one of them.
// Returns the newest committed step (0 when none).
inline uint64_t check_root_invariants(const checkpoint_store& store, const std::string& ctx) {
  INFO(ctx);
  const auto order = load_order(store.list());
  for (uint64_t step : order) {
    INFO("step " << step);
    verified_checkpoint v;
    REQUIRE_NOTHROW(v = store.load(step));
    for (uint32_t r = 0; r < v.ranks.size(); ++r) {
      const auto own_step = v.ranks[r].get_u64("counter/step");
      REQUIRE(own_step.has_value());
      CHECK(*own_step <= step);
      CHECK(v.ranks[r] == make_state(crash_seed, *own_step, r, crash_floats));
    }
  }
  if (const auto p = store.latest_pointer()) {
    const auto s = parse_checkpoint_dir_name(*p);
    REQUIRE(s.has_value());
    CHECK(std::find(order.begin(), order.end(), *s) != order.end());
  }
  const auto loaded = store.load_latest();
  if (!order.empty()) {
    REQUIRE(loaded.checkpoint.has_value());
    CHECK(loaded.checkpoint->m.meta.step == order.front());
    CHECK(loaded.skipped.empty());
  }
  return order.empty() ? 0 : order.front();
}

inline size_t count_temporaries(const checkpoint_store& store) {
  size_t n = 0;
  for (const auto& e : store.list()) n += classify_entry(e).cls == entry_class::temporary;
  return n;
}

}  // namespace msomni::ckpt::testing
