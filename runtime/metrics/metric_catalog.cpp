// The metric catalog (see metric_catalog.hpp).
#include "metrics/metric_catalog.hpp"

#include <algorithm>

namespace msomni::metrics {

namespace {

using k = metric_kind;

const std::vector<double> handling_buckets{1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1, 5};
const std::vector<double> step_buckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120};
const std::vector<double> checkpoint_buckets{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
const std::vector<double> wait_buckets{0.1, 1, 5, 10, 30, 60, 300, 900, 3600, 14400};

std::vector<family_spec> build() {
  return {
      // Every process: the actor shells' own accounting.
      {"msomni_actor_mailbox_depth", k::gauge, "Messages waiting in the actor's mailbox when it took its last one",
       {"actor"}, "every process", {}},
      {"msomni_actor_messages_total", k::counter, "Messages the actor handled, by message type", {"actor", "message"},
       "every process", {}},
      {"msomni_actor_message_seconds_total", k::counter, "Time the actor spent handling messages, by message type",
       {"actor", "message"}, "every process", {}},
      {"msomni_actor_handling_seconds", k::histogram, "Time the actor took to handle one message", {"actor"},
       "every process", handling_buckets},

      // Every process: its UCX node and gateway.
      {"msomni_transport_frames_total", k::counter, "UCX frames, by direction (sent, received, dropped)",
       {"direction"}, "every process", {}},
      {"msomni_transport_bytes_total", k::counter, "UCX bytes, by direction (sent, received)", {"direction"},
       "every process", {}},
      {"msomni_transport_send_queue_depth", k::gauge, "Frames queued for sending now", {}, "every process", {}},
      {"msomni_transport_send_queue_depth_max", k::gauge, "The most frames ever queued for sending", {},
       "every process", {}},
      {"msomni_transport_sends_rejected_total", k::counter, "Sends refused (queue full or peer not up)", {},
       "every process", {}},
      {"msomni_transport_peers_down_total", k::counter,
       "Peers that went down, by cause (silent, superseded: a quiet connection the peer replaced with a new one, other)",
       {"cause"}, "every process", {}},
      {"msomni_transport_own_pauses_total", k::counter,
       "Times this process stood still longer than a keep-alive interval (stopped, starved of the CPU); its peers' "
       "silence then is not counted against them",
       {}, "every process", {}},
      {"msomni_transport_peers_refused_total", k::counter,
       "Connections refused for failing or never finishing the authenticated hello", {}, "every process", {}},
      {"msomni_gateway_requests_total", k::counter,
       "Requests to another process that got no answer, by outcome (failed_peer_down: failed at once when that "
       "process went down; untracked: past the bound of 16384 tracked requests, left to their timeout)",
       {"outcome"}, "every process", {}},
      {"msomni_gateway_requests_pending", k::gauge, "Requests to other processes waiting for their answer now", {},
       "every process", {}},
      {"msomni_gateway_messages_total", k::counter,
       "Actor messages through the gateway, by outcome (forwarded, delivered, dropped_malformed, dropped_unknown, "
       "dropped_unsendable)",
       {"outcome"}, "every process", {}},

      // A rank's data stages.
      {"msomni_data_stage_fill", k::gauge, "Items held by a data stage now", {"stage"}, "rank", {}},
      {"msomni_data_stage_capacity", k::gauge, "The bound on a data stage's items", {"stage"}, "rank", {}},
      {"msomni_data_stage_fill_ratio", k::gauge, "A data stage's fill over its capacity (0-1)", {"stage"}, "rank", {}},
      {"msomni_data_credits_outstanding", k::gauge, "Credits a data stage holds from the next one", {"stage"}, "rank",
       {}},
      {"msomni_data_samples_total", k::counter, "Samples decoded, by modality", {"modality"}, "rank", {}},
      {"msomni_data_decode_seconds_total", k::counter, "Time spent decoding samples, by modality", {"modality"},
       "rank", {}},
      {"msomni_data_downgrades_total", k::counter, "Samples decoded in a cheaper form to keep up (videos keyframe-only)",
       {"modality"}, "rank", {}},
      {"msomni_data_bad_samples_total", k::counter, "Samples skipped as bad, by reason", {"reason"}, "rank", {}},
      {"msomni_data_mismatched_name_total", k::counter,
       "Good samples whose media bytes are another format than their name says (decoded by the bytes)", {}, "rank",
       {}},
      {"msomni_data_wait_seconds_total", k::counter, "Time the training thread waited for a batch", {}, "rank", {}},
      {"msomni_data_remote_requests_total", k::counter,
       "Requests sent to remote shard stores (s3://, http(s)://), every try counted", {}, "rank", {}},
      {"msomni_data_remote_bytes_total", k::counter,
       "Body bytes received from remote shard stores", {}, "rank", {}},
      {"msomni_data_remote_retries_total", k::counter,
       "Remote requests retried, by cause (server_error, throttled: 429 or 503 SlowDown, reset, timeout, short_body: resumed by range)", {"cause"}, "rank", {}},
      {"msomni_data_remote_failures_total", k::counter,
       "Remote requests given up after io.remote_give_up_s (the job ends with the reason)", {}, "rank", {}},
      {"msomni_data_remote_indexes_total", k::counter,
       "Shard member indexes of remote shards, by origin (built: from the tar headers by ranged reads, cache: read back from io.cache_dir)", {"origin"}, "rank", {}},
      {"msomni_data_remote_cache_reads_total", k::counter,
       "Remote shard reads, by result (hit: served from io.cache_dir, miss: read from the store)", {"result"}, "rank", {}},
      {"msomni_data_remote_cache_evictions_total", k::counter,
       "Shards evicted from the remote-shard cache, least recently used first", {}, "rank", {}},
      {"msomni_data_remote_cache_rejected_total", k::counter,
       "Remote-shard cache entries dropped as stale (size or ETag changed) or damaged (checksum)", {}, "rank", {}},
      {"msomni_data_remote_cache_write_failures_total", k::counter,
       "Writes the cache disk refused (full): the bytes were served uncached", {}, "rank", {}},
      {"msomni_data_remote_prefetch_total", k::counter,
       "Remote GETs started ahead of use, each reading one run of samples (io.remote_prefetch), by result (issued: GETs started, used: reads served from one, dropped: runs dropped by the bound on bytes held)", {"result"}, "rank", {}},
      {"msomni_data_remote_prefetch_reads_total", k::counter,
       "Sample reads the remote GETs started ahead serve (over msomni_data_remote_prefetch_total{result=\"issued\"}: samples per GET)", {}, "rank", {}},
      {"msomni_data_remote_prefetch_bytes", k::gauge,
       "Bytes of remote runs read ahead and held now (queued, in flight, or not all read yet)", {}, "rank", {}},
      {"msomni_data_remote_prefetch_capacity_bytes", k::gauge,
       "The bound on remote bytes read ahead and held (256 MiB per process)", {}, "rank", {}},
      {"msomni_data_remote_cache_bytes", k::gauge,
       "Bytes the remote-shard cache holds now", {}, "rank", {}},
      {"msomni_data_remote_cache_capacity_bytes", k::gauge,
       "The bound on the remote-shard cache (io.cache_bytes)", {}, "rank", {}},

      // A rank's training.
      {"msomni_rank_step", k::gauge, "The last optimizer step the rank finished", {}, "rank", {}},
      {"msomni_rank_steps_total", k::counter, "Optimizer steps the rank process finished", {}, "rank", {}},
      {"msomni_rank_step_seconds", k::histogram, "Time of one optimizer step", {}, "rank", step_buckets},
      {"msomni_rank_own_tokens_per_second", k::gauge, "This rank's own input tokens per second over the last step",
       {}, "rank", {}},
      {"msomni_rank_compute_seconds", k::gauge, "This rank's forward and backward time in the last step", {}, "rank", {}},
      {"msomni_rank_step_imbalance_ratio", k::gauge,
       "The last step's slowest rank's compute time over the ranks' mean (1 when even; the same on every rank)", {},
       "rank", {}},
      {"msomni_rank_cost_model_error_ratio", k::gauge,
       "Mean relative error of the batch cost model's predicted micro-batch compute time (exponentially weighted)", {},
       "rank", {}},
      {"msomni_rank_tokens_per_second", k::gauge,
       "Tokens per second over the last step, all ranks together (the job's throughput, the same on every rank; "
       "msomni_rank_own_tokens_per_second is the rank's own)",
       {},
       "rank", {}},
      {"msomni_rank_data_wait_ratio", k::gauge, "Share of the last step spent waiting for data (0-1)", {}, "rank", {}},
      {"msomni_rank_allreduce_seconds_total", k::counter, "Time spent in gradient all-reduce", {}, "rank", {}},
      {"msomni_rank_allreduce_bytes_total", k::counter, "Gradient bytes all-reduced", {}, "rank", {}},
      {"msomni_rank_collective_shared_bytes", k::gauge,
       "Shared memory the rank's all-reduce exposes to its same-host peers (at most 10 MiB and a page, whatever the "
       "model's size; 0 on the UCX ring)",
       {}, "rank", {}},
      {"msomni_rank_control_records_kept", k::gauge,
       "Step records the rank keeps for a leader that adopts it after a takeover (bounded: the newest 4096)", {},
       "rank", {}},
      {"msomni_rank_control_reports_total", k::counter,
       "Reports to the control process by outcome while it was gone: dropped (neither a step record nor a "
       "checkpoint's), overflowed (one the bounded history let go of unsent), resent (sent to an adopting leader)",
       {"outcome"}, "rank", {}},
      {"msomni_agent_rank_ends_leaderless_total", k::counter,
       "Rank ends a node agent saw while the job had no leader, by outcome: held (told to the next leader once the "
       "agent joined it) or let_go (past the newest 64 held, never told)",
       {"outcome"}, "node agent", {}},
      {"msomni_rank_loss", k::gauge, "Loss of the last step", {}, "rank", {}},
      {"msomni_rank_threads", k::gauge, "Compute threads of the rank", {"device"}, "rank", {}},
      {"msomni_rank_memory_bytes", k::gauge, "Memory in use by the rank process (resident host memory)", {"kind"},
       "rank", {}},
      {"msomni_rank_compute_memory_bytes", k::gauge,
       "The compute backend's memory as it counts every allocation: in_use at the last step's end, that step's peak, "
       "and the budget (memory.device_memory_gb; 0 none)",
       {"kind"}, "rank", {}},
      {"msomni_rank_batch_memory_bytes", k::gauge, "Host memory of the packed batches the data pipeline holds", {},
       "rank", {}},

      // The control process: membership, recovery, checkpoints.
      {"msomni_job_world_size", k::gauge, "Members of the current membership epoch", {}, "control", {}},
      {"msomni_job_target_world_size", k::gauge, "Replicas the job is heading for", {}, "control", {}},
      {"msomni_job_epoch", k::gauge, "The current membership epoch", {}, "control", {}},
      {"msomni_job_step", k::gauge, "The job's last step", {}, "control", {}},
      {"msomni_job_phase", k::gauge, "1 for the job's current phase, 0 for the others", {"phase"}, "control", {}},
      {"msomni_elastic_events_total", k::counter, "Elastic events journaled, by kind", {"kind"}, "control", {}},
      {"msomni_heartbeat_misses_total", k::counter, "Node agents declared down after their heartbeats stopped (a silent rank is "
       "msomni_transport_peers_down_total{cause=\"silent\"} of the control process)", {}, "control",
       {}},
      {"msomni_control_leader", k::gauge, "1 while this control process leads the job (always, without a store)", {},
       "control", {}},
      {"msomni_control_lease_left_seconds", k::gauge,
       "What is left of the leader's lease in the control store, as the leader can vouch for it (0 without a store)",
       {}, "control", {}},
      {"msomni_control_store_queue_depth", k::gauge, "Journal events waiting to be committed to the control store", {},
       "control", {}},
      {"msomni_control_store_commits_total", k::counter,
       "Fenced commits to the control store, by result (committed, fenced, unreachable)", {"result"}, "control", {}},
      {"msomni_control_store_events_dropped_total", k::counter,
       "Journal events not committed to the control store because its queue was full (events.jsonl has them)", {},
       "control", {}},
      {"msomni_control_store_failovers_total", k::counter,
       "Control store requests that moved on to another etcd member because one did not answer", {}, "control", {}},
      {"msomni_recoveries_total", k::counter, "Recoveries from a lost member, as the elastic core counts them against its bound", {},
       "control", {}},
      {"msomni_checkpoint_save_seconds", k::histogram, "Time ranks stood still for a checkpoint after a step", {},
       "control", checkpoint_buckets},
      {"msomni_checkpoint_bytes_total", k::counter, "Bytes of committed checkpoints, all shards", {}, "control", {}},
      {"msomni_checkpoints_total", k::counter, "Checkpoints by result (committed, failed)", {"result"}, "control", {}},
      {"msomni_checkpoint_verify_failures_total", k::counter,
       "Checkpoints a rank found torn or mismatched and did not load", {}, "rank", {}},
      {"msomni_predictor_idle_window_seconds", k::gauge, "Predicted length of the job's next idle window (0: none)",
       {}, "control", {}},
      {"msomni_predictor_idle_window_start_seconds", k::gauge, "Time until the job's next predicted idle window", {},
       "control", {}},
      {"msomni_predictor_idle_ratio", k::gauge, "Predicted idle share of the job's GPU time (0-1)", {}, "control", {}},
      {"msomni_predictor_confidence", k::gauge, "Confidence of the idle-window prediction (0-1)", {}, "control", {}},
      {"msomni_metrics_sources", k::gauge, "Processes whose pushed samples the control process holds", {}, "control",
       {}},
      {"msomni_memory_samples_total", k::counter,
       "Memory samples the ranks sent, by result (accepted; refused: malformed, stale or from no member)", {"result"},
       "control", {}},
      {"msomni_memory_forecast_bytes", k::gauge,
       "The memory watermark predictor's forecast peak of a rank's next memory.horizon_steps steps", {"target"},
       "control", {}},
      {"msomni_memory_advice_total", k::counter,
       "Advice the memory watermark predictor sent, by action (reserve, evict; overflow: forecast + margin beyond the "
       "device)",
       {"action"}, "control", {}},
      {"msomni_memory_fits_total", k::counter,
       "Steps the memory forecast said would not fit, by result (requested: sent to the rank; replayed: an earlier "
       "attempt's decision sent again on resume; split, keyframe: what the rank did; unchanged: the step's batch fit "
       "as it was; unfit: over the budget even so)",
       {"result"}, "control", {}},
      {"msomni_rank_fit_requests_total", k::counter,
       "Memory fit requests a rank received, by result (taken by a step; dropped: the bounded inbox was full; stale: "
       "for a step already run or another slot; superseded: a live request for a step a replayed one decides)",
       {"result"}, "rank", {}},
      {"msomni_metrics_reports_total", k::counter, "Metric reports pushed to the control process, by result",
       {"result"}, "control", {}},
      {"msomni_metrics_endpoint_connections_total", k::counter,
       "Connections to this /metrics endpoint, by outcome (served; timed_out: no request within the header timeout or "
       "the response not taken within the write timeout; evicted: closed, still silent, to make room for a newer one; "
       "refused: closed at once while every open connection was being answered; dropped: the client went first)",
       {"outcome"}, "control, scheduler", {}},

      // msomni-sched.
      {"msomni_sched_jobs", k::gauge, "Jobs known to the scheduler, by class and phase", {"class", "phase"},
       "scheduler", {}},
      {"msomni_sched_gpus", k::gauge, "GPUs of the cluster, by state (free, used)", {"state"}, "scheduler", {}},
      {"msomni_sched_queue_wait_seconds", k::histogram, "Time a job waited in the queue before it started", {"class"},
       "scheduler", wait_buckets},
      {"msomni_sched_guests", k::gauge, "Guest jobs co-located on critical jobs' GPUs now", {}, "scheduler", {}},
      {"msomni_sched_preemptions_total", k::counter, "Preemptions, by the preempted job's class", {"class"},
       "scheduler", {}},
      {"msomni_sched_budget_holds_total", k::counter,
       "Passes in which a critical job lent nothing because its slowdown budget was spent", {}, "scheduler", {}},
      {"msomni_sched_idle_window_seconds", k::gauge, "Predicted idle window of a running job", {"job"},
       "scheduler", {}},
      {"msomni_sched_idle_confidence", k::gauge, "Confidence of a running job's idle-window prediction (0-1)",
       {"job"}, "scheduler", {}},
      {"msomni_sched_guest_evictions_total", k::counter,
       "Guests evicted from their host, by reason (memory: the host's memory forecast no longer leaves the guest's "
       "need; lending: the host lends no idle share; free_gpus: the guest runs alone; host_ended)",
       {"reason"}, "scheduler", {}},
      {"msomni_sched_guest_memory_skips_total", k::counter,
       "Guests not placed beside a host because its memory forecast left less of the device than they need",
       {}, "scheduler", {}},
      {"msomni_sched_memory_reports_total", k::counter,
       "Memory forecasts jobs reported, by result (taken; unknown: of no job the scheduler knows)", {"result"},
       "scheduler", {}},
      {"msomni_sched_ended_jobs", k::gauge,
       "Ended jobs the scheduler keeps, by how they ended (finished, failed, stopped and resumable, lost)", {"end"},
       "scheduler", {}},
      {"msomni_sched_ended_jobs_capacity", k::gauge, "The most ended jobs the scheduler keeps (the oldest go first)",
       {}, "scheduler", {}},
      {"msomni_sched_ended_jobs_dropped_total", k::counter, "Ended jobs dropped from the history past its capacity",
       {}, "scheduler", {}},
  };
}

}  // namespace

const char* to_string(metric_kind kind) {
  switch (kind) {
    case metric_kind::counter: return "counter";
    case metric_kind::gauge: return "gauge";
    case metric_kind::histogram: return "histogram";
  }
  return "?";
}

const std::vector<family_spec>& metric_catalog() {
  static const std::vector<family_spec> all = build();
  return all;
}

const family_spec* find_family(std::string_view name) {
  const auto& all = metric_catalog();
  const auto it = std::find_if(all.begin(), all.end(), [&](const family_spec& f) { return f.name == name; });
  return it == all.end() ? nullptr : &*it;
}

bool is_identity_label(std::string_view label) { return label == "job" || label == "rank" || label == "node"; }

}  // namespace msomni::metrics
