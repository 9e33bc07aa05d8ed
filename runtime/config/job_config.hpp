// The typed, fully resolved job configuration: one struct per TOML section.
// The defaults here are msomni's own; config_loader fills them in and records which it used.
#pragma once

#include "core/job_class.hpp"
#include "core/modality.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace msomni::config {

using ::msomni::job_class;
using ::msomni::modality;

struct job_section {
  std::string name = "msomni-job";
  job_class klass = job_class::regular;
};

// A value of a plugin-declared [model] key: integer, floating, boolean or string.
using plugin_value = std::variant<int64_t, double, bool, std::string>;

struct model_section {
  std::string name = "fuyu-tiny";
  std::string plugin;          // shared library that registers `name`; empty = built in
  int64_t d_model = 128;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t d_ff = 512;
  int64_t image_size = 32;     // square images are resized to this many pixels
  int64_t patch_size = 8;
  int64_t video_frames = 2;    // frames sampled per video sample
  int64_t max_seq_len = 256;   // patches + text tokens
  int64_t vocab_size = 260;    // 256 bytes + specials
  // name = "torch": a PyTorch nn.Module run by a Python worker (docs/torch_models.md).
  std::string torch_file;                   // its Python file, absolute (given relative to the config's folder)
  std::string torch_class;                  // the nn.Module subclass in it
  std::string torch_args = "{}";            // its constructor's keyword arguments, a JSON object
  std::string torch_python = "/usr/bin/python3";  // the interpreter that runs it (with torch installed)
  // The keys model.plugin declares for itself (model/plugin_keys.hpp), each at its declared
  // type: every declared key is present, at its default when the config leaves it out.
  std::map<std::string, plugin_value> plugin_values;
};

struct data_source {
  std::string name;
  std::string uri;             // path, file://path, or synthetic://<kind>
  double weight = 1.0;
  modality kind = modality::image;
};

struct data_section {
  std::string mix_strategy = "balanced_by_weight";
  bool shuffle = true;
  // "steps": each optimizer step's samples are placed on ranks and micro-batches by their
  // predicted cost, so every rank has about the same work; "off": dealt in order.
  std::string balance = "off";
  int64_t balance_group = 1;  // steps balanced together (1: each step keeps exactly its samples)
  std::vector<data_source> sources;
};

struct training_section {
  int64_t global_batch = 8;
  int64_t micro_batch = 2;
  int64_t grad_accum = 2;      // left out: global_batch / (micro_batch x elasticity.replicas)
  int64_t steps = 100;
  double lr = 3e-4;
  int64_t seed = 1234;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  int64_t warmup_steps = 0;
  std::string device = "auto";  // auto | cpu | cuda
  int64_t max_nonfinite_steps = 3;  // non-finite loss/gradient steps in a row before a rollback
  double loss_spike_factor = 5.0;   // a loss beyond this x the running median is an event; 0 = off
  int64_t threads = 0;              // CPU kernel threads per rank; 0 = the node's cores / its rank slots
};


struct elasticity_section {
  int64_t replicas = 2;
  int64_t min_replicas = 1;
  int64_t max_replicas = 2;
  double grace_period_s = 120.0;
  double heartbeat_interval_s = 10.0;
  int64_t heartbeat_misses = 3;
  double scale_up_utilization = 0.90;
  double scale_up_sustain_s = 180.0;
  double scale_down_utilization = 0.65;
  double scale_down_sustain_s = 600.0;
  bool autoscale = false;              // scale by utilisation (the four keys above)
  double autoscale_cooldown_s = 300.0;  // nothing after a resize for this long
};

struct checkpoint_section {
  std::string dir = "checkpoints";  // relative paths are under the run directory
  int64_t interval_steps = 50;
  int64_t keep = 3;
  int64_t zstd_level = 1;
  int64_t zstd_threads = 2;
  bool async = true;
  bool incremental = false;  // not built on a job's path: refused when true
  int64_t max_consecutive_failures = 3;  // failed saves in a row before the job stops
};

struct memory_section {
  int64_t sequence_length = 200;
  int64_t horizon_steps = 10;
  double sample_interval_ms = 100.0;
  double safety_margin_gb = 3.5;
  int64_t pca_dims = 16;
  double device_memory_gb = 80.0;
  bool predictor_enabled = true;  // the memory watermark predictor in the control process
};

// io.max_image_pixels / io.max_video_pixels by default: about 40 megapixels an image, a 4K
// UHD video frame (the decoders of tools and tests take the same).
inline constexpr int64_t default_max_image_pixels = int64_t{40} << 20;
inline constexpr int64_t default_max_video_pixels = int64_t{3840} * 2160;

struct io_section {
  // "actors": each rank's batches come from the data stage actors, decoding beside compute;
  // "inline": decoded in the training thread (the deterministic reference).
  std::string pipeline = "actors";
  int64_t prefetch_depth = 3;
  int64_t decode_workers = 2;
  int64_t queue_capacity = 64;
  bool downgrade_video = true;
  double max_data_wait_ms = 200.0;
  int64_t max_sample_bytes = int64_t{256} << 20;  // a larger tar member is skipped unread (too_large)
  // Media whose header states more pixels (per image, per video frame) is skipped undecoded
  // (too_many_pixels): the decoder's memory and time per sample stay bounded.
  int64_t max_image_pixels = default_max_image_pixels;
  int64_t max_video_pixels = default_max_video_pixels;
  std::map<std::string, double> modality_weights = {{"image", 1.0}, {"video", 1.0}, {"text", 1.0}};
  // Remote sources (s3://, http(s)://; actors/data/remote_storage.hpp). The local cache of
  // their bytes: a directory and its bound per process ("" and 0: no cache).
  std::string cache_dir;
  int64_t cache_bytes = 0;
  // S3: the store (empty: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS for s3_region), its
  // region (empty: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1), and a shared-credentials
  // file with the profile to read (empty: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). Keys
  // themselves are never config values: configs are copied into plans and run directories.
  std::string s3_endpoint;
  std::string s3_region;
  std::string s3_credentials_file;
  std::string s3_profile = "default";
  double remote_request_timeout_ms = 30000.0;  // one request's deadline
  double remote_give_up_s = 120.0;             // a request failing this long ends the job
  double remote_backoff_max_ms = 5000.0;       // the cap on one wait between retries
  int64_t remote_prefetch = 1024;              // own draws of a remote source hinted ahead (runs, one GET each)
};

// [health]: msomni-run's pre-flight check before a start (docs/health_check.md).
struct health_section {
  std::string preflight = "quick";  // quick | full | off
  int64_t node_port = 0;            // a TCP port every [[cluster.nodes]] host must accept; 0: any answer counts
};

// [control]: where the control plane keeps its durable state (docs/control_failover.md).
struct control_section {
  std::string store;      // "" = embedded (one control process, nothing kept outside the run
                          // directory); "etcd://HOST:PORT[,HOST:PORT...]": leader and standbys
  int64_t lease_ttl_s = 5;  // the leader's lease; a standby takes over within it plus a third
};

struct scheduler_section {
  int64_t step_window = 200;
  double idle_threshold = 0.35;
  double safety_factor = 2.0;
  double drain_period_s = 600.0;
  // Notice -> forced release for best-effort work: time for its SIGTERM handler.
  double best_effort_drain_s = 30.0;
  double min_run_window_s = 7200.0;
  double reservation_window_s = 1800.0;
  double critical_slowdown_budget = 0.01;  // share of a critical job's run its guests may cost it
  int64_t queue_capacity = 1024;
  // Read by msomni-sched (the scheduler service); a training job ignores them.
  std::string policy = "omni";                 // omni | exclusive | greedy
  double min_confidence = 0.5;
  double critical_peak_memory_s = 604800.0;
  double critical_reserve_factor = 2.0;
};

struct cluster_node {
  std::string name;
  std::string host = "127.0.0.1";
  std::string rack = "rack0";
  std::string switch_name = "switch0";
  int64_t slots = 2;           // rank processes (GPUs) this node can host
};

// cluster.metrics_port = "auto": the endpoint takes a free port and control.json names it.
inline constexpr int64_t metrics_port_auto = -1;

struct cluster_section {
  std::string control_host = "127.0.0.1";
  int64_t control_port = 0;    // 0 = pick a free port at start-up
  int64_t metrics_port = 0;    // the Prometheus endpoint (/metrics): 0 = off, metrics_port_auto = any free port
  std::vector<cluster_node> nodes;  // empty = one local node with enough slots
  // Inside a Slurm allocation (SLURM_JOB_ID set): "auto" runs on its nodes (they replace
  // `nodes`; msomni-run starts one msomni-agent per node with srun), "off" ignores Slurm,
  // "require" refuses to start outside an allocation.
  std::string slurm = "auto";
  // After a scale-down leaves an allocated node without ranks, give it back to Slurm
  // (`scontrol update JobId=... NodeList=...`). Needs the job to run on a Slurm allocation.
  bool release_idle_nodes = false;
};

struct job_config {
  std::string source_path;     // the TOML file it came from
  job_section job;
  model_section model;
  data_section data;
  training_section training;
  elasticity_section elasticity;
  checkpoint_section checkpoint;
  memory_section memory;
  io_section io;
  health_section health;
  control_section control;
  cluster_section cluster;
  // "key.path = value" for every key the file left out and the loader filled in.
  std::vector<std::string> defaults_filled;
  // "FILE:LINE:COL" of every key the file (or --set) gave, for later semantic errors.
  std::map<std::string, std::string> key_locations;
  // The resolved config by key: every key given or defaulted -> its value as TOML text
  // ("model.d_model" -> "64"). Checkpoint manifests record it.
  std::map<std::string, std::string> resolved_values;
};

// The CPU threads one rank computes with: training.threads, or when it is 0 the node's
// `hardware_threads` shared evenly by the `slots_on_node` ranks it may run, less the rank's
// io.decode_workers when the data stage actors decode beside compute (real shards with
// io.pipeline = "actors"): compute threads that outnumber the cores the decoders leave stall
// one another at every parallel region. At least 1.
int64_t threads_per_rank(const job_config& cfg, int64_t slots_on_node, int64_t hardware_threads);
// The decode workers that threads_per_rank leaves cores for (0 when decoding is inline or
// every source is synthetic://).
int64_t decode_workers_beside_compute(const job_config& cfg);

}  // namespace msomni::config
