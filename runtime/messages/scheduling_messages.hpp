// Scheduler and VRAM-predictor messages: preemption and memory advice.
// Plain structs, no CAF: pure cores include this header; what CAF needs to carry them
// (their inspect overloads) is in scheduling_messages_inspect.hpp, which the catalog includes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// job (`msomni job`, from its run's memory advice) -> scheduler: the job's device memory as its
// memory watermark predictor sees it. forecast_peak_bytes: the largest over its ranks of the
// forecast peak plus the safety margin (0: no forecast yet); device_bytes: the device budget
// each rank has (memory.device_memory_gb; 0: unknown). Sent only when either changed. A host's
// report bounds what its guests may hold on its GPUs; a guest's raises its own need.
struct job_memory_report {
  std::string job;
  uint64_t forecast_peak_bytes = 0;
  uint64_t device_bytes = 0;
  uint64_t step = 0;  // the newest step the forecast is of
  bool operator==(const job_memory_report&) const = default;
};

// What a step's batch asks of memory: its micro-batches together (counts summed, seq_len and
// micro_batch the largest). Part of memory_sample.
struct batch_features {
  uint32_t image_samples = 0;
  uint32_t video_samples = 0;
  uint32_t text_samples = 0;
  uint64_t image_patches = 0;
  uint64_t video_patches = 0;
  uint64_t text_tokens = 0;  // non-padding text tokens
  uint32_t seq_len = 0;      // positions per sample the model runs (patch slots + text)
  uint32_t micro_batch = 0;  // samples per micro-batch
  bool operator==(const batch_features&) const = default;
};

// rank -> orchestrator: the rank's compute memory, exactly as its backend counts it. One after
// every optimizer step (in_step false: peak_bytes is that step's peak, in_use_bytes what is held
// at its end), and every memory.sample_interval_ms while a step runs (in_step true: the step
// in progress, the peak so far). Not acknowledged; a stale or foreign one is dropped.
struct memory_sample {
  std::string name;          // the rank process ("rank-2")
  uint64_t epoch = 0;        // the membership epoch the rank is in
  uint32_t rank = 0;         // its index in that epoch's world
  uint32_t world_size = 0;
  uint64_t step = 0;         // the step finished (or, in_step, the one running)
  int64_t at_ns = 0;         // unix time
  bool in_step = false;
  uint64_t in_use_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t host_batch_bytes = 0;  // packed batches the data pipeline holds in host memory
  uint64_t budget_bytes = 0;      // 0: none
  batch_features batch;           // the step's (empty in_step)
  std::vector<batch_features> upcoming;  // the next steps' batches the data pipeline already holds
  bool operator==(const memory_sample&) const = default;
};

enum class advice_kind : uint8_t { none = 0, reserve = 1, evict = 2 };

// memory watermark predictor -> orchestrator (and on to whoever acts on it): `reserve {gb,
// rank}` for the forecast peak of the rank's next steps plus the safety margin, or `evict
// {task}` when co-located work holds memory the reservation needs. `fits` false: even the
// whole device is too small for the forecast.
struct memory_advice {
  advice_kind kind = advice_kind::none;
  double gb = 0;             // the reservation (reserve) or what must be freed (evict)
  uint32_t rank = 0;         // the rank's index in its epoch's world
  std::string task;          // evict: the co-located job
  std::string reason;
  std::string rank_name;     // the rank process ("rank-1")
  uint64_t step = 0;         // the step whose sample led to it
  double forecast_gb = 0;    // the forecast peak over the horizon
  bool fits = true;
  bool operator==(const memory_advice&) const = default;
};

// memory watermark predictor -> orchestrator -> the rank's "worker" actor: step `step` of the
// rank (index `rank` in a world of `world_size`) is forecast to peak at `forecast_bytes`, which
// with the safety margin passes the device; `budget_bytes` is the device less the margin and
// `batch` the step's batch as the forecast saw it. The rank runs that step's micro-batches in
// parts that fit (rank_worker/batch_fit.hpp). replay: a decision an earlier attempt of the run
// took for this step, sent again before the rank runs it, so a resumed run repeats it.
struct memory_fit {
  std::string rank_name;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint64_t step = 0;
  double forecast_bytes = 0;
  double budget_bytes = 0;
  batch_features batch;
  bool replay = false;
  bool operator==(const memory_fit&) const = default;
};

// rank -> orchestrator, after a step that had a memory_fit: what it did (journaled as a
// memory_fit event, which a resume replays). Not acknowledged.
struct memory_fit_done {
  memory_fit fit;
  uint64_t epoch = 0;
  uint32_t micro_batches_split = 0;
  uint32_t parts = 0;
  uint32_t keyframe_cuts = 0;
  bool fits = true;           // false: a part was over the allowance even so
  uint64_t peak_bytes = 0;    // the step's measured peak
  std::string detail;         // "2 parts (3+1 samples)"
  bool operator==(const memory_fit_done&) const = default;
};

}  // namespace msomni::msg
