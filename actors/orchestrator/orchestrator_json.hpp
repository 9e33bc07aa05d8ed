// The JSON forms of the orchestrator's records: a metrics.jsonl line, the `msomni status`
// reply, and the objects run_journal writes. Built with nlohmann::ordered_json so the fields
// stay in the order written here (step, loss and world_size first: people read these lines,
// and scripts that look for a field keep finding it where it always was). Non-finite numbers
// follow core/json_number.hpp: null with a sibling "<name>_nonfinite": true.
#pragma once

#include "bad_sample_ledger.hpp"
#include "elastic_core.hpp"
#include "progress_core.hpp"

#include "core/json_text.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace msomni::orchestrator {

using ordered_json = nlohmann::ordered_json;
using msomni::json_text;  // core/json_text.hpp: compact, one line, never throws on bad UTF-8

// {"step":..,"loss":..,"world_size":..,"step_time_ms":..,"tokens_per_s":..,"data_wait_ms":..,
//  "checkpoint_ms":..,"downgraded_samples":..,"time_ms":..,"bad_samples":{reason:count},
//  "grad_norm":..,"compute_ms_max":..,"compute_imbalance":..} plus "nonfinite":{"loss":"nan",..} naming the non-finite values and
// "optimizer_skipped":true when they apply. Times in ms to 3 decimals, tokens/s to 1, the
// loss and gradient norm to 9 significant digits.
ordered_json metrics_json(const metrics_record& r);

// The status with the bad samples met so far (all ranks): {"phase","epoch","step",
// "total_steps","world","target","grad_accum","ranks":[..],"agents":[..],"bad_samples":{..},
// "departed":[..]}. "ranks" holds the members still there; "departed" those that left or died,
// with the step they left at.
ordered_json status_json(const job_status& s, const std::map<std::string, uint64_t>& bad_samples);

// [{"shard","key","reason","cause","draws","first_step","first_rank"}...]: `shard` is the key
// up to its first '/', `key` the rest (empty for a whole shard's damage).
ordered_json bad_sample_list_json(const std::vector<bad_sample_ledger::entry>& entries);

}  // namespace msomni::orchestrator
