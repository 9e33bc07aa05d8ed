// Scheduler and VRAM-predictor messages: preemption and memory advice.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace msomni::msg {

// scheduler -> victim job: checkpoint fully within `drain_s`, then release.
struct preempt_notice {
  std::string job;
  uint64_t epoch = 0;
  double drain_s = 0;
  std::string reason;
  bool operator==(const preempt_notice&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, preempt_notice& x) {
  return f(caf::meta::type_name("preempt_notice"), x.job, x.epoch, x.drain_s, x.reason);
}

// victim job -> scheduler: resources released, resumable from `checkpoint_step`. Idempotent.
struct job_released {
  std::string job;
  uint64_t epoch = 0;
  uint64_t checkpoint_step = 0;
  bool operator==(const job_released&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_released& x) {
  return f(caf::meta::type_name("job_released"), x.job, x.epoch, x.checkpoint_step);
}

// memory probe -> VRAM predictor, every step or sample interval.
struct memory_sample {
  uint32_t rank = 0;
  uint64_t step = 0;
  int64_t at_ns = 0;
  uint64_t used_bytes = 0;
  uint64_t reserved_bytes = 0;
  bool operator==(const memory_sample&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_sample& x) {
  return f(caf::meta::type_name("memory_sample"), x.rank, x.step, x.at_ns, x.used_bytes,
           x.reserved_bytes);
}

enum class advice_kind : uint8_t { none = 0, reserve = 1, evict = 2 };

// VRAM predictor -> scheduler/mixer: `reserve {gb, rank}` or `evict {task}`.
struct memory_advice {
  advice_kind kind = advice_kind::none;
  double gb = 0;
  uint32_t rank = 0;
  std::string task;
  std::string reason;
  bool operator==(const memory_advice&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, memory_advice& x) {
  return f(caf::meta::type_name("memory_advice"), x.kind, x.gb, x.rank, x.task, x.reason);
}

}  // namespace msomni::msg
