// The resolved plan printed by `msomni-run --dry-run`, and the stable config hash.
#include "config/config_loader.hpp"
#include "config/device_choice.hpp"

#include "core/rng.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <thread>

namespace msomni::config {

namespace {

// The CPU threads a rank on a node of `slots` computes with, as the rank itself will decide it.
std::string threads_of(const job_config& cfg, int64_t slots, bool this_machine) {
  const auto& t = cfg.training;
  if (t.threads > 0 || this_machine) {
    const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const auto n = threads_per_rank(cfg, slots, hw);
    const auto decoders = decode_workers_beside_compute(cfg);
    return std::to_string(n) + (n == 1 ? " thread" : " threads") +
           (t.threads > 0 ? " (training.threads)"
                          : " (" + std::to_string(hw) + " cores / " + std::to_string(slots) + " slots" +
                                (decoders > 0 ? ", less " + std::to_string(decoders) + " decode workers" : "") + ")");
  }
  const auto decoders = decode_workers_beside_compute(cfg);
  return "that node's cores / " + std::to_string(slots) + " slots" +
         (decoders > 0 ? " less " + std::to_string(decoders) + " decode workers" : "") + " threads";
}

// A plugin key's value as TOML would write it.
std::string plugin_value_text(const plugin_value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&v)) return "\"" + *s + "\"";
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, std::get<double>(v)).ptr;  // shortest exact form
  return std::string(text, end);
}

// What a rank of another node computes on: that node's rank decides when it starts.
std::string remote_compute_of(const job_config& cfg, int64_t slots, int64_t local_index) {
  const auto cpu = "cpu, " + threads_of(cfg, slots, false);
  const auto gpu = "GPU " + std::to_string(local_index) + " of that node's usable set";
  if (cfg.training.device == "cpu") return cpu;
  if (cfg.training.device == "cuda") return "cuda, " + gpu + " (the rank refuses to start without it)";
  return "cuda on " + gpu + " if it has one, else " + cpu;
}

// Ranks are placed on nodes in order, filling each node's slots (one local node by default,
// whose slots are max_replicas).
std::vector<std::string> placement(const job_config& cfg, const node_gpu_facts& local) {
  std::vector<std::string> out;
  const auto replicas = cfg.elasticity.replicas;
  if (cfg.cluster.nodes.empty()) {
    for (int64_t r = 0; r < replicas; ++r)
      out.push_back("rank " + std::to_string(r) + " -> local (" + cfg.cluster.control_host + "), " +
                    describe_local_compute(cfg, local, r, threads_of(cfg, cfg.elasticity.max_replicas, true)));
    return out;
  }
  int64_t rank = 0;
  for (const auto& n : cfg.cluster.nodes)
    for (int64_t s = 0; s < n.slots && rank < replicas; ++s, ++rank)
      out.push_back("rank " + std::to_string(rank) + " -> " + n.name + " (" + n.host + ", rack " +
                    n.rack + ", switch " + n.switch_name + "), " + remote_compute_of(cfg, n.slots, s));
  return out;
}

}  // namespace

std::string render_plan(const job_config& c, const node_gpu_facts& local) {
  std::ostringstream os;
  const auto& t = c.training;
  const auto& e = c.elasticity;
  os << "msomni plan for " << c.source_path << "\n";
  os << "  job:          " << c.job.name << " (class " << to_string(c.job.klass) << ")\n";
  os << "  model:        " << c.model.name;
  if (c.model.name == "torch")  // the module's size: msomni-run's model check reports it
    os << ": " << c.model.torch_class << " from " << c.model.torch_file << " (its size: see model check)";
  else if (c.model.plugin.empty() || c.model.name == "fuyu-tiny")  // the built-in model the [model] shape keys describe
    os << ", d_model " << c.model.d_model << ", " << c.model.n_layers << " layers, " << c.model.n_heads
       << " heads, image " << c.model.image_size << "px / patch " << c.model.patch_size
       << (c.model.plugin.empty() ? "" : " (model.plugin " + c.model.plugin + " is loaded too)");
  else  // the plugin's model has a shape of its own: msomni-run's model check reports its size
    os << " from " << c.model.plugin << " (its size: see model check)";
  os << "\n";
  if (!c.model.plugin_values.empty()) {
    os << "  plugin keys:  ";
    const char* separator = "";
    for (const auto& [key, value] : c.model.plugin_values) {
      os << separator << "model." << key << " = " << plugin_value_text(value);
      separator = ", ";
    }
    os << "\n";
  }
  os << "  ranks:        " << e.replicas << " data-parallel replicas (min " << e.min_replicas
     << ", max " << e.max_replicas << "), one process each\n";
  for (const auto& p : placement(c, local)) os << "                " << p << "\n";
  os << "  batch:        global " << t.global_batch << " = micro " << t.micro_batch << " x accum "
     << t.grad_accum << " x replicas " << e.replicas << "\n";
  os << "  training:     " << t.steps << " steps, lr " << t.lr << ", seed " << t.seed << ", device "
     << t.device << " (each rank's device is on its line above; CUDA ranks all-reduce gradients with NCCL)\n";
  os << "  guards:       roll back after " << t.max_nonfinite_steps
     << " non-finite steps in a row (stop if it recurs); "
     << (t.loss_spike_factor > 0 ? "loss spikes beyond " + (std::ostringstream() << t.loss_spike_factor).str() +
                                       "x the running median are events"
                                 : std::string("no loss spike detection"))
     << "\n";
  os << "  data:         mix " << c.data.mix_strategy << (c.data.shuffle ? ", shuffled" : "") << "\n";
  double total = 0;
  for (const auto& s : c.data.sources) total += s.weight;
  for (const auto& s : c.data.sources)
    os << "                " << s.name << ": " << to_string(s.kind) << " from " << s.uri
       << " (weight " << s.weight << ", share " << (total > 0 ? 100.0 * s.weight / total : 0)
       << "%)\n";
  const auto& io = c.io;
  os << "  io:           "
     << (io.pipeline == "actors" ? "data stage actors (decoding beside compute)" : "inline pipeline (decoding in the training thread)")
     << ", prefetch depth " << io.prefetch_depth << ", " << io.decode_workers
     << " decode workers, queue " << io.queue_capacity << ", max sample "
     << (io.max_sample_bytes % (1 << 20) == 0 ? std::to_string(io.max_sample_bytes >> 20) + " MiB"
                                               : std::to_string(io.max_sample_bytes) + " bytes")
     << " (larger members are skipped as too_large), at most " << io.max_image_pixels << " pixels an image and "
     << io.max_video_pixels << " a video frame (more are skipped undecoded as too_many_pixels)\n";
  os << "  checkpoints:  " << c.checkpoint.dir << " every " << c.checkpoint.interval_steps
     << " steps, keep " << c.checkpoint.keep << ", zstd level " << c.checkpoint.zstd_level
     << (c.checkpoint.async ? ", async" : "") << ", stop after " << c.checkpoint.max_consecutive_failures
     << " failed saves in a row\n";
  os << "  memory:       budget " << c.memory.device_memory_gb << " GB per rank (memory.device_memory_gb; on a GPU at most the device), sampled every " << c.memory.sample_interval_ms << " ms within a step\n";
  os << "  elasticity:   heartbeat " << e.heartbeat_interval_s << " s x " << e.heartbeat_misses
     << " misses, grace period " << e.grace_period_s << " s\n";
  os << "  control:      " << c.cluster.control_host << ":"
     << (c.cluster.control_port ? std::to_string(c.cluster.control_port) : "auto") << "\n";
  os << "  metrics:      "
     << (c.cluster.metrics_port == 0 ? std::string("off")
         : c.cluster.metrics_port == config::metrics_port_auto
             ? "http://" + c.cluster.control_host + ":(any free port)/metrics, named in control.json"
             : "http://" + c.cluster.control_host + ":" + std::to_string(c.cluster.metrics_port) + "/metrics")
     << "\n";
  os << "  config hash:  " << std::hex << config_hash(c) << std::dec << "\n";
  os << "  defaults filled in (" << c.defaults_filled.size() << "):\n";
  for (const auto& d : c.defaults_filled) os << "                " << d << "\n";
  return os.str();
}

uint64_t config_hash(const job_config& c) {
  // FNV-1a over the plan minus its own hash line and the file name: stable across runs and
  // machines, changed by any resolved value.
  std::ostringstream os;
  const auto& t = c.training;
  const auto& m = c.model;
  os << c.job.name << '|' << m.name << '|' << m.plugin << '|' << m.d_model << '|' << m.n_layers
     << '|' << m.n_heads << '|' << m.d_ff << '|' << m.image_size << '|' << m.patch_size << '|'
     << m.video_frames << '|' << m.max_seq_len << '|' << m.vocab_size << '|' << t.micro_batch
     << '|' << t.grad_accum << '|' << t.steps << '|' << t.lr << '|' << t.seed << '|'
     << t.weight_decay << '|' << t.grad_clip << '|' << t.warmup_steps << '|'
     << c.data.mix_strategy << '|' << c.data.shuffle;
  for (const auto& s : c.data.sources)
    os << '|' << s.name << ',' << s.uri << ',' << s.weight << ',' << to_string(s.kind);
  // Only present with a plugin that declares keys, so every other config keeps its hash.
  for (const auto& [key, value] : m.plugin_values) os << "|model." << key << '=' << plugin_value_text(value);
  // Only present for a torch model, so every other config keeps its hash.
  if (m.name == "torch")
    os << "|model.torch=" << m.torch_file << ',' << m.torch_class << ',' << m.torch_args << ',' << m.torch_python;
  return stable_hash(os.str());
}

}  // namespace msomni::config
