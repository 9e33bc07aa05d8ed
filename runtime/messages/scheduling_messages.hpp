// Scheduler and VRAM-predictor messages: preemption and memory advice.
// Plain structs, no CAF: pure cores include this header; what CAF needs to carry them
// (their inspect overloads) is in scheduling_messages_inspect.hpp, which the catalog includes.
#pragma once

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

// victim job -> scheduler: resources released, resumable from `checkpoint_step`. Idempotent.
struct job_released {
  std::string job;
  uint64_t epoch = 0;
  uint64_t checkpoint_step = 0;
  bool operator==(const job_released&) const = default;
};

// memory probe -> VRAM predictor, every step or sample interval.
struct memory_sample {
  uint32_t rank = 0;
  uint64_t step = 0;
  int64_t at_ns = 0;
  uint64_t used_bytes = 0;
  uint64_t reserved_bytes = 0;
  bool operator==(const memory_sample&) const = default;
};

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

}  // namespace msomni::msg
