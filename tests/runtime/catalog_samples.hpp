// One filled-in sample per catalog type. The round-trip test asks for a sample of every type
// in the catalog's ID block, so a new message without a sample here fails to compile.
#pragma once

#include "messages/catalog.hpp"

namespace msomni::testing {

template <class T>
struct tag {};

inline msg::heartbeat sample(tag<msg::heartbeat>) { return {"node-a", 3, 7, 42, -5}; }
inline msg::rank_ready sample(tag<msg::rank_ready>) { return {"rank-2", "node-a", "127.0.0.1:4100", 4242, true, 1200}; }
inline msg::join_world sample(tag<msg::join_world>) {
  return {4, {"rank-0", "rank-2"}, {"127.0.0.1:4000", "127.0.0.1:4002"}, 2, msg::state_source::checkpoint, true, "scale-down to 2"};
}
inline msg::rank_stalled sample(tag<msg::rank_stalled>) { return {"rank-1", 5, 77, "peer rank-3 down"}; }
inline msg::rank_left sample(tag<msg::rank_left>) {
  return {"rank-3", 5, 1601, "3 checkpoint saves failed in a row", 0xfeedull, true};
}
inline msg::scale_request sample(tag<msg::scale_request>) { return {77, 4, 120.5, "cli:root"}; }
inline msg::scale_reply sample(tag<msg::scale_reply>) { return {77, true, "at barrier 1700"}; }
inline msg::step_record sample(tag<msg::step_record>) {
  return {10, 2, 3.25, 1000000, 1234.5, 2000, 1, 5000, {{"corrupt_image", 2}, {"too_large", 1}}, 0.75, true, msg::number_kind::nan, msg::number_kind::positive_infinity, 7, 3, 41.5, 36.25};
}
inline msg::bad_sample_seen sample(tag<msg::bad_sample_seen>) {
  return {"shard-000001.tar/clip_3", "corrupt_video", "a cut file: 12 video packets of the 48 its header promises", 4};
}
inline msg::bad_samples_seen sample(tag<msg::bad_samples_seen>) {
  return {1, 42, {sample(tag<msg::bad_sample_seen>{}), {"shard-000000.tar/cat", "mismatched_name", "its bytes are PNG", 1}}};
}
inline msg::bad_sample_count sample(tag<msg::bad_sample_count>) { return {"missing_member", 3}; }
inline msg::rank_failed sample(tag<msg::rank_failed>) { return {"rank-2", 4, 17, "data source 'img': 10000 bad samples in a row"}; }
inline msg::checkpoint_done sample(tag<msg::checkpoint_done>) { return {200, 1, false, 4096, 0xdeadbeefcafef00dull, "ENOSPC"}; }
inline msg::credit_grant sample(tag<msg::credit_grant>) { return {2, modality::video, 3, 1}; }
inline msg::source_cursor sample(tag<msg::source_cursor>) { return {"videos", 1, 12, 65536, 999}; }
inline msg::preempt_notice sample(tag<msg::preempt_notice>) { return {"be-17", 3, 600, "critical job needs GPUs"}; }
inline msg::job_released sample(tag<msg::job_released>) { return {"be-17", 3, 4400}; }
inline msg::batch_features sample(tag<msg::batch_features>) { return {1, 1, 0, 16, 32, 77, 40, 2}; }
inline msg::memory_sample sample(tag<msg::memory_sample>) {
  return {"rank-1", 3, 1, 2, 88, 123, false, 40ull << 30, 44ull << 30, 1 << 20, 80ull << 30,
          sample(tag<msg::batch_features>{}), {{0, 0, 2, 0, 0, 90, 48, 2}}};
}
inline msg::memory_advice sample(tag<msg::memory_advice>) {
  return {msg::advice_kind::reserve, 3.5, 1, "", "peak in 4 steps", "rank-1", 42, 3.1, true};
}
inline msg::memory_fit sample(tag<msg::memory_fit>) {
  return {"rank-1", 1, 4, 57, 1.25e7, 1.1e7, {1, 2, 0, 16, 64, 90, 120, 3}, true};
}
inline msg::memory_fit_done sample(tag<msg::memory_fit_done>) {
  return {sample(tag<msg::memory_fit>{}), 3, 1, 2, 1, false, 10'500'000, "2 parts (2+1 samples)"};
}
inline msg::stage_pressure sample(tag<msg::stage_pressure>) { return {2, 14, 16, 1, 0.375}; }
inline msg::agent_hello sample(tag<msg::agent_hello>) { return {"node-b", "rack2", "switch1", 4, 999}; }
inline msg::agent_signalled sample(tag<msg::agent_signalled>) { return {"node-b", 15, "slurm"}; }
inline msg::rank_rejoin sample(tag<msg::rank_rejoin>) {
  return {"rank-1", "local", "127.0.0.1:4100", 4242, 3, {"rank-0", "rank-1"}, 1, 88, true};
}
inline msg::rejoin_answer sample(tag<msg::rejoin_answer>) { return {true, 86, ""}; }
inline msg::spawn_rank sample(tag<msg::spawn_rank>) { return {"rank-5", {"job.toml", "--name", "rank-5"}}; }
inline msg::stop_rank sample(tag<msg::stop_rank>) { return {"rank-5", "grace period of 120 s passed"}; }
inline msg::rank_exited sample(tag<msg::rank_exited>) { return {"rank-5", "node-b", -9, "killed"}; }
inline msg::node_check_request sample(tag<msg::node_check_request>) {
  return {"quick", "job.toml", "[job]\nname = \"x\"\n", {"training.steps=5"}, "/runs/x/checkpoints"};
}
inline msg::node_check_report sample(tag<msg::node_check_report>) {
  return {"node-b", "{\"verdict\":\"pass\"}", "127.0.0.1:4711"};
}
inline msg::node_pair_probe sample(tag<msg::node_pair_probe>) { return {3, "node-c", "127.0.0.1:4712", true, 262144, 5}; }
inline msg::node_pair_result sample(tag<msg::node_pair_result>) { return {3, "node-b", "node-c", 12.5, ""}; }
inline msg::control_request sample(tag<msg::control_request>) { return {"0123abcd", "scale-down", 2, 120, "cli:root"}; }
inline msg::control_reply sample(tag<msg::control_reply>) { return {false, "refused: below min_replicas", "{}"}; }

inline msg::job_submit sample(tag<msg::job_submit>) { return {"crit-1", job_class::critical, 16, 8, 2, 42.5, 20'000'000'000}; }
inline msg::job_rejoin sample(tag<msg::job_rejoin>) { return {{"reg-3", job_class::regular, 16, 8, 1}, {8, 9, 10, 11, 12, 13, 14, 15}, 1, 5}; }
inline msg::job_step_report sample(tag<msg::job_step_report>) { return {"crit-1", 30.5, 4.25, 120, 0.2}; }
inline msg::job_memory_report sample(tag<msg::job_memory_report>) { return {"crit-1", 41'500'000'000, 80'000'000'000, 1200}; }
inline msg::job_finished sample(tag<msg::job_finished>) { return {"crit-1"}; }
inline msg::job_command sample(tag<msg::job_command>) {
  return {msg::command_kind::force_release, "be-17", 4, {0, 1, 2, 3}, 4, 0, 600, "", 0.25, 4400, 7200.5, "no job_released within the drain period (600 s)",
          {{"drain_s", 600}}};
}
inline msg::metric_series sample(tag<msg::metric_series>) {
  return {{"actor"}, {"orchestrator"}, 0, msg::number_kind::nan, 12, 0.5, {0.1, 1}, {4, 11}};
}
inline msg::metric_family_series sample(tag<msg::metric_family_series>) {
  return {"msomni_actor_handling_seconds", msg::metric_kind::histogram, {sample(tag<msg::metric_series>{})}};
}
inline msg::metrics_report sample(tag<msg::metrics_report>) {
  return {"rank-1", "rank-1", "node-a", 9, {sample(tag<msg::metric_family_series>{})}};
}
inline msg::scheduler_status_request sample(tag<msg::scheduler_status_request>) { return {"cli:root"}; }
inline msg::scheduler_status sample(tag<msg::scheduler_status>) {
  return {"omni", 64, 8, 3, 12, 40, 1024, 9, 2, 1, 4, 5120, 77, 6, 3, true, 2,
          {{"crit-1", job_class::critical, "running", 16, 2, false, "", 120.5, "below_threshold", "crit-1 lends nothing", 0, 0, 0, "",
            {{"idle_share", 0.2}, {"idle_threshold", 0.35}}},
           {"be-3", job_class::best_effort, "guest", 2, 1, false, "crit-1", 300, "none", "", 0.375, 0, 0,
            "host's predicted idle share passes the threshold", {{"idle_share", 0.5}, {"idle_threshold", 0.35}}}},
          2, 400.5, "127.0.0.1:9464", "critical_reserve", "reg-2", "2 GPUs free, reg-2 waits: critical_reserve", 30,
          {{"reg-4", job_class::regular, "stopped", 4, 1, false, "", 50.0, "none", "", 0, 5, 1200, "", {}}}, 256,
          {{"gpus_free", 2}, {"gpus_wanted", 4}}, {sample(tag<msg::job_command>{})}};
}
inline msg::scheduler_job_row sample(tag<msg::scheduler_job_row>) {
  return {"reg-2", job_class::regular, "pending", 8, 0, false, "", 42.25, "critical_reserve", "2 free GPUs are kept", 0, 0, 0, "",
          {{"gpus_free", 2}, {"reserve_gpus", 8}}};
}

}  // namespace msomni::testing
