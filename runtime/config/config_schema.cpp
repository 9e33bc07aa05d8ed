// The schema: which keys each section has, their types, ranges and defaults, and the
// cross-section rules (batch arithmetic, replica bounds, model shape).
#include "config/config_schema.hpp"

#include "config/config_limits.hpp"
#include "config/config_loader.hpp"
#include "config/plugin_library.hpp"
#include "config/torch_model_keys.hpp"
#include "core/store_url.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>

namespace msomni::config {

namespace {

// A numeric key within its named limit (config_limits.hpp, shared with the flags that set it).
template <class T>
void read_within(table_reader& r, std::string_view key, T& out, limits::range<T> limit) {
  r.read(key, out, limit.min, limit.max);
}

// A key whose feature is not built yet: accepted at its default, refused with the reason
// otherwise, so that no setting is silently ignored.
template <class T>
void refuse_changed(table_reader& r, std::string_view key, const T& value, const T& default_value,
                    const std::string& reason) {
  if (value == default_value) return;
  const auto* n = r.node(key);
  r.context().fail(r.key_path(key), n ? n : r.anchor(), reason + "; leave it at its default");
}

template <class T>
void refuse_unbuilt(table_reader& r, std::string_view key, const T& value, const T& default_value,
                    const std::string& what) {
  refuse_changed(r, key, value, default_value, "not built yet: " + what);
}

void read_job(table_reader& r, job_section& s) {
  r.read("name", s.name);
  r.read_enum("class", s.klass,
              {{"critical", job_class::critical},
               {"regular", job_class::regular},
               {"best_effort", job_class::best_effort}});
  r.finish();
  if (const auto problem = plain_name_problem(s.name); !problem.empty())
    r.context().fail(r.key_path("name"), r.node("name") ? r.node("name") : r.anchor(), "job name " + problem);
}

// The keys model.plugin declares (plugin_library.hpp), read like built-in ones. A plugin
// that cannot be opened, or whose table is malformed or reuses a built-in name, is an
// error at model.plugin; its keys then stay unknown, so they are reported too.
void read_plugin_keys(table_reader& r, model_section& s, const std::set<std::string, std::less<>>& builtin) {
  if (s.plugin.empty()) return;
  auto& ctx = r.context();
  const auto* at = r.node("plugin") ? r.node("plugin") : r.anchor();
  std::vector<plugin_key_spec> keys;
  try {
    const auto base_dir = std::filesystem::path(ctx.file()).parent_path().string();
    keys = declared_plugin_keys(open_model_plugin(resolve_plugin_path(s.plugin, base_dir)));
  } catch (const std::exception& e) {
    ctx.fail(r.key_path("plugin"), at, e.what());
    return;
  }
  for (const auto& k : keys)
    if (builtin.count(k.name)) {
      ctx.fail(r.key_path("plugin"), at, "the plugin declares key \"" + k.name + "\", which is a built-in [model] key");
      return;
    }
  using model::plugin_key_type;
  for (const auto& k : keys) {
    switch (k.type) {
      case plugin_key_type::integer: {
        int64_t v = k.int_default;
        r.read(k.name, v, k.int_min, k.int_max);
        s.plugin_values[k.name] = v;
        break;
      }
      case plugin_key_type::floating: {
        double v = k.float_default;
        r.read(k.name, v, k.float_min, k.float_max);
        s.plugin_values[k.name] = v;
        break;
      }
      case plugin_key_type::boolean: {
        bool v = k.bool_default;
        r.read(k.name, v);
        s.plugin_values[k.name] = v;
        break;
      }
      case plugin_key_type::string: {
        std::string v = k.string_default;
        r.read(k.name, v);
        s.plugin_values[k.name] = std::move(v);
        break;
      }
    }
  }
}

void read_model(table_reader& r, model_section& s) {
  static const std::set<std::string, std::less<>> builtin = {
      "name", "plugin", "d_model", "n_layers", "n_heads", "d_ff", "image_size", "patch_size",
      "video_frames", "max_seq_len", "vocab_size", "torch_file", "torch_class", "torch_args", "torch_python"};
  r.read("name", s.name);
  r.read("plugin", s.plugin);
  read_within(r, "d_model", s.d_model, limits::model::d_model);
  read_within(r, "n_layers", s.n_layers, limits::model::n_layers);
  read_within(r, "n_heads", s.n_heads, limits::model::n_heads);
  read_within(r, "d_ff", s.d_ff, limits::model::d_ff);
  read_within(r, "image_size", s.image_size, limits::model::image_size);
  read_within(r, "patch_size", s.patch_size, limits::model::patch_size);
  read_within(r, "video_frames", s.video_frames, limits::model::video_frames);
  read_within(r, "max_seq_len", s.max_seq_len, limits::model::max_seq_len);
  read_within(r, "vocab_size", s.vocab_size, limits::model::vocab_size);
  read_torch_model_keys(r, s);
  read_plugin_keys(r, s, builtin);
  r.finish();
  auto& ctx = r.context();
  if (s.d_model % s.n_heads != 0)
    ctx.fail(r.key_path("n_heads"), r.node("n_heads") ? r.node("n_heads") : r.anchor(),
             "d_model " + std::to_string(s.d_model) + " is not divisible by n_heads " +
                 std::to_string(s.n_heads));
  if (s.image_size % s.patch_size != 0)
    ctx.fail(r.key_path("patch_size"), r.node("patch_size") ? r.node("patch_size") : r.anchor(),
             "image_size " + std::to_string(s.image_size) + " is not divisible by patch_size " +
                 std::to_string(s.patch_size));
  const int64_t side = s.image_size / std::max<int64_t>(s.patch_size, 1);
  const int64_t patches = side * side * s.video_frames;
  if (patches + 16 > s.max_seq_len)
    ctx.fail(r.key_path("max_seq_len"), r.node("max_seq_len") ? r.node("max_seq_len") : r.anchor(),
             "too short for " + std::to_string(patches) +
                 " video patches plus 16 text tokens (needs >= " + std::to_string(patches + 16) + ")");
}

void read_sources(table_reader& r, data_section& s) {
  auto& ctx = r.context();
  const auto* arr = r.array("sources");
  if (!arr || arr->empty()) {
    ctx.fail(r.key_path("sources"), arr ? static_cast<const toml::node*>(arr) : r.anchor(),
             "at least one [[data.sources]] table is required");
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto path = r.key_path("sources") + "[" + std::to_string(i) + "]";
    const auto* node = arr->get(i);
    if (!node->is_table()) {
      ctx.fail(path, node, "expected table, got " + type_name_of(*node));
      continue;
    }
    data_source src;
    src.name = "source" + std::to_string(i);
    table_reader sr(ctx, node->as_table(), path, node);
    sr.read("name", src.name);
    sr.require_string("uri", src.uri);
    read_within(sr, "weight", src.weight, limits::data::source_weight);
    if (!sr.node("modality"))
      ctx.fail(sr.key_path("modality"), node, "required key is missing (image, video or text)");
    sr.read_enum("modality", src.kind,
                 {{"image", modality::image}, {"video", modality::video}, {"text", modality::text}});
    sr.finish();
    if (!names.insert(src.name).second)
      ctx.fail(sr.key_path("name"), sr.node("name") ? sr.node("name") : node,
               "duplicate source name \"" + src.name + "\"");
    s.sources.push_back(std::move(src));
  }
  double total = 0;
  for (const auto& src : s.sources) total += src.weight;
  if (!s.sources.empty() && total <= 0)
    ctx.fail(r.key_path("sources"), arr, "source weights sum to 0");
}

void read_data(table_reader& r, data_section& s) {
  r.read("mix_strategy", s.mix_strategy, {"balanced_by_weight", "fixed_weight"});
  r.read("shuffle", s.shuffle);
  r.read("balance", s.balance, {"off", "steps"});
  r.read("balance_group", s.balance_group, int64_t{1}, int64_t{1024});
  refuse_unbuilt(r, "balance_group", s.balance_group, int64_t{1},
                 "moving samples between the steps of a group; 1 balances the ranks within each step");
  read_sources(r, s);
  r.finish();
}

void read_training(table_reader& r, training_section& s) {
  read_within(r, "global_batch", s.global_batch, limits::training::global_batch);
  read_within(r, "micro_batch", s.micro_batch, limits::training::micro_batch);
  // Left out, grad_accum is derived from the batch sizes and replicas (check_cross_section).
  if (r.node("grad_accum")) read_within(r, "grad_accum", s.grad_accum, limits::training::grad_accum);
  read_within(r, "steps", s.steps, limits::training::steps);
  read_within(r, "lr", s.lr, limits::training::lr);
  read_within(r, "seed", s.seed, limits::training::seed);
  read_within(r, "weight_decay", s.weight_decay, limits::training::weight_decay);
  read_within(r, "grad_clip", s.grad_clip, limits::training::grad_clip);
  read_within(r, "warmup_steps", s.warmup_steps, limits::training::warmup_steps);
  // Whether this rank's node has the GPU is the node's to say (config/device_choice.hpp).
  r.read("device", s.device, {"auto", "cpu", "cuda"});
  read_within(r, "max_nonfinite_steps", s.max_nonfinite_steps, limits::training::max_nonfinite_steps);
  read_within(r, "loss_spike_factor", s.loss_spike_factor, limits::training::loss_spike_factor);
  read_within(r, "threads", s.threads, limits::training::threads);
  r.finish();
  if (s.loss_spike_factor > 0 && s.loss_spike_factor <= 1)
    r.context().fail(r.key_path("loss_spike_factor"), r.node("loss_spike_factor") ? r.node("loss_spike_factor") : r.anchor(),
                     "must be 0 (off) or above 1: a factor of at most 1 calls every step above the median a spike");
}

void read_elasticity(table_reader& r, elasticity_section& s) {
  read_within(r, "replicas", s.replicas, limits::elasticity::replicas);
  read_within(r, "min_replicas", s.min_replicas, limits::elasticity::replicas);
  read_within(r, "max_replicas", s.max_replicas, limits::elasticity::replicas);
  read_within(r, "grace_period_s", s.grace_period_s, limits::elasticity::grace_period_s);
  read_within(r, "heartbeat_interval_s", s.heartbeat_interval_s, limits::elasticity::heartbeat_interval_s);
  read_within(r, "heartbeat_misses", s.heartbeat_misses, limits::elasticity::heartbeat_misses);
  read_within(r, "scale_up_utilization", s.scale_up_utilization, limits::elasticity::utilization);
  read_within(r, "scale_up_sustain_s", s.scale_up_sustain_s, limits::elasticity::sustain_s);
  read_within(r, "scale_down_utilization", s.scale_down_utilization, limits::elasticity::utilization);
  read_within(r, "scale_down_sustain_s", s.scale_down_sustain_s, limits::elasticity::sustain_s);
  r.read("autoscale", s.autoscale);
  read_within(r, "autoscale_cooldown_s", s.autoscale_cooldown_s, limits::elasticity::autoscale_cooldown_s);
  r.finish();
  if (!s.autoscale) {
    const elasticity_section d;
    const std::string off = "has no effect while elasticity.autoscale is false (set it to true, or resize with msomni "
                            "scale-up / scale-down)";
    refuse_changed(r, "autoscale_cooldown_s", s.autoscale_cooldown_s, d.autoscale_cooldown_s, off);
    refuse_changed(r, "scale_up_utilization", s.scale_up_utilization, d.scale_up_utilization, off);
    refuse_changed(r, "scale_up_sustain_s", s.scale_up_sustain_s, d.scale_up_sustain_s, off);
    refuse_changed(r, "scale_down_utilization", s.scale_down_utilization, d.scale_down_utilization, off);
    refuse_changed(r, "scale_down_sustain_s", s.scale_down_sustain_s, d.scale_down_sustain_s, off);
  }
  if (s.scale_down_utilization >= s.scale_up_utilization)
    r.context().fail(r.key_path("scale_down_utilization"),
                     r.node("scale_down_utilization") ? r.node("scale_down_utilization") : r.anchor(),
                     "must be below scale_up_utilization");
}

void read_checkpoint(table_reader& r, checkpoint_section& s) {
  r.read("dir", s.dir);
  read_within(r, "interval_steps", s.interval_steps, limits::checkpoint::interval_steps);
  read_within(r, "keep", s.keep, limits::checkpoint::keep);
  read_within(r, "zstd_level", s.zstd_level, limits::checkpoint::zstd_level);
  read_within(r, "zstd_threads", s.zstd_threads, limits::checkpoint::zstd_threads);
  r.read("async", s.async);
  r.read("incremental", s.incremental);
  read_within(r, "max_consecutive_failures", s.max_consecutive_failures, limits::checkpoint::max_consecutive_failures);
  r.finish();
  refuse_unbuilt(r, "async", s.async, true, "synchronous saves (the ranks always write off the training path)");
  refuse_unbuilt(r, "incremental", s.incremental, false,
                 "incremental saves on a job's path (the ranks write full checkpoints; the checkpoint store can "
                 "write and merge incremental ones for tools)");
  if (s.dir.empty()) r.context().fail(r.key_path("dir"), r.node("dir"), "must not be empty");
}

void read_memory(table_reader& r, memory_section& s) {
  read_within(r, "sequence_length", s.sequence_length, limits::memory::sequence_length);
  read_within(r, "horizon_steps", s.horizon_steps, limits::memory::horizon_steps);
  read_within(r, "sample_interval_ms", s.sample_interval_ms, limits::memory::sample_interval_ms);
  read_within(r, "safety_margin_gb", s.safety_margin_gb, limits::memory::safety_margin_gb);
  read_within(r, "pca_dims", s.pca_dims, limits::memory::pca_dims);
  read_within(r, "device_memory_gb", s.device_memory_gb, limits::memory::device_memory_gb);
  r.read("predictor_enabled", s.predictor_enabled);
  r.finish();
  // device_memory_gb is each rank's compute memory budget (on a GPU the smaller of it and the
  // device) and sample_interval_ms the rank's in-step memory sampling. The memory watermark
  // predictor (predictor_enabled) forecasts horizon_steps ahead from the last
  // sequence_length step samples (its learned model compresses them to pca_dims) and advises
  // reserving the forecast plus safety_margin_gb; switched off, those four keys would change
  // nothing, so they must stay at their defaults then.
  if (!s.predictor_enabled) {
    const memory_section d;
    const std::string off = "memory.predictor_enabled = false switches off the predictor that reads it";
    refuse_changed(r, "sequence_length", s.sequence_length, d.sequence_length, off);
    refuse_changed(r, "horizon_steps", s.horizon_steps, d.horizon_steps, off);
    refuse_changed(r, "safety_margin_gb", s.safety_margin_gb, d.safety_margin_gb, off);
    refuse_changed(r, "pca_dims", s.pca_dims, d.pca_dims, off);
  }
}

void read_io(table_reader& r, io_section& s) {
  r.read("pipeline", s.pipeline, {"actors", "inline"});
  read_within(r, "prefetch_depth", s.prefetch_depth, limits::io::prefetch_depth);
  read_within(r, "decode_workers", s.decode_workers, limits::io::decode_workers);
  read_within(r, "queue_capacity", s.queue_capacity, limits::io::queue_capacity);
  r.read("downgrade_video", s.downgrade_video);
  read_within(r, "max_data_wait_ms", s.max_data_wait_ms, limits::io::max_data_wait_ms);
  read_within(r, "max_sample_bytes", s.max_sample_bytes, limits::io::max_sample_bytes);
  read_within(r, "max_image_pixels", s.max_image_pixels, limits::io::max_image_pixels);
  read_within(r, "max_video_pixels", s.max_video_pixels, limits::io::max_video_pixels);
  if (const auto* t = r.table("modality_weights")) {
    table_reader mw(r.context(), t, r.key_path("modality_weights"), t);
    for (auto& [name, weight] : s.modality_weights) read_within(mw, name, weight, limits::io::modality_weight);
    mw.finish();
  } else {
    for (const auto& [name, weight] : s.modality_weights)
      r.context().note_default(r.key_path("modality_weights") + "." + name,
                               (std::ostringstream() << weight).str());
  }
  r.read("cache_dir", s.cache_dir);
  read_within(r, "cache_bytes", s.cache_bytes, limits::io::cache_bytes);
  if (!s.cache_dir.empty() && s.cache_bytes == 0)
    r.context().fail(r.key_path("cache_dir"), r.node("cache_dir") ? r.node("cache_dir") : r.anchor(),
                     "io.cache_dir needs io.cache_bytes, the bound on what the cache holds");
  if (s.cache_dir.empty() && s.cache_bytes != 0)
    r.context().fail(r.key_path("cache_bytes"), r.node("cache_bytes") ? r.node("cache_bytes") : r.anchor(),
                     "io.cache_bytes bounds the cache in io.cache_dir; set io.cache_dir too or leave it at 0");
  r.read("s3_endpoint", s.s3_endpoint);
  if (!s.s3_endpoint.empty() && s.s3_endpoint.rfind("http://", 0) != 0 && s.s3_endpoint.rfind("https://", 0) != 0)
    r.context().fail(r.key_path("s3_endpoint"), r.node("s3_endpoint") ? r.node("s3_endpoint") : r.anchor(),
                     "io.s3_endpoint is an http:// or https:// url, e.g. https://s3.us-east-1.amazonaws.com");
  if (s.s3_endpoint.find('@') != std::string::npos)
    r.context().fail(r.key_path("s3_endpoint"), r.node("s3_endpoint") ? r.node("s3_endpoint") : r.anchor(),
                     "io.s3_endpoint carries credentials; use io.s3_credentials_file or the AWS_* environment");
  r.read("s3_region", s.s3_region);
  r.read("s3_credentials_file", s.s3_credentials_file);
  r.read("s3_profile", s.s3_profile);
  read_within(r, "remote_request_timeout_ms", s.remote_request_timeout_ms, limits::io::remote_request_timeout_ms);
  read_within(r, "remote_give_up_s", s.remote_give_up_s, limits::io::remote_give_up_s);
  read_within(r, "remote_backoff_max_ms", s.remote_backoff_max_ms, limits::io::remote_backoff_max_ms);
  read_within(r, "remote_prefetch", s.remote_prefetch, limits::io::remote_prefetch);
  r.finish();
}

// Remote-only io keys change nothing without a remote source: refused rather than ignored.
void check_remote_keys(table_reader& io, const job_config& c) {
  bool any_remote = false, any_s3 = false;
  for (const auto& src : c.data.sources) {
    any_remote = any_remote || is_remote_source(src.uri);
    any_s3 = any_s3 || src.uri.rfind("s3://", 0) == 0;
  }
  const io_section d;
  const std::string none = "no data source is s3:// or http(s)://";
  auto refuse = [&](const char* key, bool changed, bool applies, const std::string& why) {
    if (!changed || applies) return;
    const auto* n = io.node(key);
    io.context().fail(io.key_path(key), n ? n : io.anchor(), why + "; remove it");
  };
  refuse("cache_dir", c.io.cache_dir != d.cache_dir, any_remote, "io.cache_dir caches remote sources only, and " + none);
  for (const auto& [key, changed] :
       {std::pair{"s3_endpoint", c.io.s3_endpoint != d.s3_endpoint}, std::pair{"s3_region", c.io.s3_region != d.s3_region},
        std::pair{"s3_credentials_file", c.io.s3_credentials_file != d.s3_credentials_file},
        std::pair{"s3_profile", c.io.s3_profile != d.s3_profile}})
    refuse(key, changed, any_s3, "io." + std::string(key) + " applies to s3:// sources only, and no data source is one");
  for (const auto& [key, changed] :
       {std::pair{"remote_request_timeout_ms", c.io.remote_request_timeout_ms != d.remote_request_timeout_ms},
        std::pair{"remote_give_up_s", c.io.remote_give_up_s != d.remote_give_up_s},
        std::pair{"remote_backoff_max_ms", c.io.remote_backoff_max_ms != d.remote_backoff_max_ms},
        std::pair{"remote_prefetch", c.io.remote_prefetch != d.remote_prefetch}})
    refuse(key, changed, any_remote, "io." + std::string(key) + " applies to remote sources only, and " + none);
}

void read_health(table_reader& r, health_section& s) {
  r.read("preflight", s.preflight, {"quick", "full", "off"});
  read_within(r, "node_port", s.node_port, limits::cluster::port);
  r.finish();
}

void read_control(table_reader& r, control_section& s) {
  r.read("store", s.store);
  if (!s.store.empty()) {
    std::string why;
    if (parse_store_url(s.store, why).empty()) r.context().fail(r.key_path("store"), r.node("store"), why);
  }
  read_within(r, "lease_ttl_s", s.lease_ttl_s, limits::control::lease_ttl_s);
  r.finish();
}

void read_scheduler(table_reader& r, scheduler_section& s) {
  read_within(r, "step_window", s.step_window, limits::scheduler::step_window);
  read_within(r, "idle_threshold", s.idle_threshold, limits::scheduler::idle_threshold);
  read_within(r, "safety_factor", s.safety_factor, limits::scheduler::safety_factor);
  read_within(r, "drain_period_s", s.drain_period_s, limits::scheduler::drain_period_s);
  read_within(r, "best_effort_drain_s", s.best_effort_drain_s, limits::scheduler::best_effort_drain_s);
  read_within(r, "min_run_window_s", s.min_run_window_s, limits::scheduler::min_run_window_s);
  read_within(r, "reservation_window_s", s.reservation_window_s, limits::scheduler::reservation_window_s);
  read_within(r, "critical_slowdown_budget", s.critical_slowdown_budget, limits::scheduler::critical_slowdown_budget);
  read_within(r, "queue_capacity", s.queue_capacity, limits::scheduler::queue_capacity);
  r.read("policy", s.policy, {"omni", "exclusive", "greedy"});
  read_within(r, "min_confidence", s.min_confidence, limits::scheduler::min_confidence);
  read_within(r, "critical_peak_memory_s", s.critical_peak_memory_s, limits::scheduler::critical_peak_memory_s);
  read_within(r, "critical_reserve_factor", s.critical_reserve_factor, limits::scheduler::critical_reserve_factor);
  r.finish();
}

void read_cluster(table_reader& r, cluster_section& s) {
  auto& ctx = r.context();
  r.read("control_host", s.control_host);
  read_within(r, "control_port", s.control_port, limits::cluster::port);
  r.read_integer_or_word("metrics_port", s.metrics_port, limits::cluster::port.min, limits::cluster::port.max, "auto",
                         metrics_port_auto);
  r.read("slurm", s.slurm, {"auto", "off", "require"});
  r.read("release_idle_nodes", s.release_idle_nodes);
  if (s.release_idle_nodes && s.slurm == "off")
    ctx.fail(r.key_path("release_idle_nodes"), r.node("release_idle_nodes"),
             "gives nodes back to Slurm, but cluster.slurm = \"off\" runs outside Slurm");
  if (const auto* arr = r.array("nodes")) {
    std::set<std::string> names;
    for (size_t i = 0; i < arr->size(); ++i) {
      const auto path = r.key_path("nodes") + "[" + std::to_string(i) + "]";
      const auto* node = arr->get(i);
      if (!node->is_table()) {
        ctx.fail(path, node, "expected table, got " + type_name_of(*node));
        continue;
      }
      cluster_node n;
      table_reader nr(ctx, node->as_table(), path, node);
      nr.require_string("name", n.name);
      nr.read("host", n.host);
      nr.read("rack", n.rack);
      nr.read("switch", n.switch_name);
      read_within(nr, "slots", n.slots, limits::cluster::node_slots);
      nr.finish();
      if (!n.name.empty() && !names.insert(n.name).second)
        ctx.fail(nr.key_path("name"), nr.node("name"), "duplicate node name \"" + n.name + "\"");
      s.nodes.push_back(std::move(n));
    }
  }
  r.finish();
}

// Rules that span sections; reported at the key a person would edit.
void check_cross_section(table_reader& training, table_reader& elastic, job_config& c) {
  auto& ctx = training.context();
  auto& t = c.training;
  const auto& e = c.elasticity;
  if (c.model.name == "torch" && t.device == "cuda")
    ctx.fail("training.device", training.node("device") ? training.node("device") : training.anchor(),
             "not built yet: a torch model (model.name = \"torch\") computes on the CPU; set \"cpu\" or \"auto\"");
  bool batch_known = true;
  if (!training.node("grad_accum")) {
    // The runtime recomputes grad_accum in the same way for every world size it resizes to.
    const int64_t per_step = t.micro_batch * e.replicas;
    const auto* at = training.node("global_batch") ? training.node("global_batch") : training.anchor();
    batch_known = false;
    if (per_step <= 0 || t.global_batch % per_step != 0)
      ctx.fail("training.global_batch", at,
               "training.grad_accum is left out and cannot be derived: global_batch " +
                   std::to_string(t.global_batch) + " is not a multiple of micro_batch " +
                   std::to_string(t.micro_batch) + " x elasticity.replicas " + std::to_string(e.replicas) +
                   " = " + std::to_string(per_step));
    else if (t.global_batch / per_step > limits::training::grad_accum.max)
      ctx.fail("training.global_batch", at,
               "the derived grad_accum " + std::to_string(t.global_batch / per_step) + " is out of range [1, " +
                   std::to_string(limits::training::grad_accum.max) + "]");
    else {
      t.grad_accum = t.global_batch / per_step;
      ctx.note_default("training.grad_accum", std::to_string(t.grad_accum));
      batch_known = true;
    }
  }
  const int64_t product = t.micro_batch * t.grad_accum * e.replicas;
  if (batch_known && t.global_batch != product) {
    const auto* n = training.node("global_batch");
    ctx.fail("training.global_batch", n ? n : training.anchor(),
             "inconsistent batch arithmetic: global_batch " + std::to_string(t.global_batch) +
                 " != micro_batch " + std::to_string(t.micro_batch) + " x grad_accum " +
                 std::to_string(t.grad_accum) + " x elasticity.replicas " +
                 std::to_string(e.replicas) + " = " + std::to_string(product));
  }
  if (e.min_replicas > e.replicas || e.replicas > e.max_replicas) {
    const auto* n = elastic.node("replicas");
    ctx.fail("elasticity.replicas", n ? n : elastic.anchor(),
             "replicas " + std::to_string(e.replicas) + " must lie within [min_replicas " +
                 std::to_string(e.min_replicas) + ", max_replicas " +
                 std::to_string(e.max_replicas) + "]");
  }
  if (!c.cluster.nodes.empty()) {
    int64_t slots = 0;
    for (const auto& n : c.cluster.nodes) slots += n.slots;
    if (slots < e.max_replicas) {
      const auto* n = elastic.node("max_replicas");
      ctx.fail("elasticity.max_replicas", n ? n : elastic.anchor(),
               "max_replicas " + std::to_string(e.max_replicas) + " exceeds the " +
                   std::to_string(slots) + " slots of [[cluster.nodes]]");
    }
  }
}

}  // namespace

// job.name names the default run directory (runs/<name>) and msomni job's id its scratch
// directory, so either must be one plain path component: no separators, no "." or "..",
// nothing invisible.
int64_t decode_workers_beside_compute(const job_config& cfg) {
  if (cfg.io.pipeline != "actors") return 0;
  for (const auto& s : cfg.data.sources)
    if (s.uri.rfind("synthetic://", 0) != 0) return cfg.io.decode_workers;
  return 0;
}

int64_t threads_per_rank(const job_config& cfg, int64_t slots_on_node, int64_t hardware_threads) {
  if (cfg.training.threads > 0) return cfg.training.threads;
  const int64_t share = hardware_threads / std::max<int64_t>(1, slots_on_node);
  return std::max<int64_t>(1, share - decode_workers_beside_compute(cfg));
}

std::string plain_name_problem(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 128) return "is longer than 128 characters";
  if (name == "." || name == "..") return "must not be \"" + name + "\" (it would name a directory outside runs/)";
  if (name.front() == '-' || name.front() == '.') return "must not start with '-' or '.'";
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.')
      return "may contain only letters, digits, '-', '_' and '.' (it names a directory)";
  return {};
}

void read_scheduler_schema(const toml::table& root, reader_context& ctx, scheduler_section& s) {
  table_reader top(ctx, &root, "", &root);
  auto sched = table_reader(ctx, top.table("scheduler"), "scheduler", &root);
  read_scheduler(sched, s);
  top.finish();
}

void read_schema(const toml::table& root, reader_context& ctx, job_config& c) {
  table_reader top(ctx, &root, "", &root);
  auto section = [&](std::string_view name) {
    return table_reader(ctx, top.table(name), std::string(name), &root);
  };
  auto job = section("job");
  read_job(job, c.job);
  auto model = section("model");
  read_model(model, c.model);
  auto data = section("data");
  read_data(data, c.data);
  auto training = section("training");
  read_training(training, c.training);
  auto elastic = section("elasticity");
  read_elasticity(elastic, c.elasticity);
  auto ckpt = section("checkpoint");
  read_checkpoint(ckpt, c.checkpoint);
  auto memory = section("memory");
  read_memory(memory, c.memory);
  auto io = section("io");
  read_io(io, c.io);
  check_remote_keys(io, c);
  auto health = section("health");
  read_health(health, c.health);
  // [scheduler] configures msomni-sched (its --config file); a training job reads none of it.
  if (const auto* t = top.table("scheduler"))
    ctx.fail("scheduler", t,
             "[scheduler] configures msomni-sched (msomni-sched --config FILE), not a training job; "
             "move it to the scheduler's file (configs/scheduler/) and remove it here");
  auto control = section("control");
  read_control(control, c.control);
  auto cluster = section("cluster");
  read_cluster(cluster, c.cluster);
  top.finish();
  check_cross_section(training, elastic, c);
}

}  // namespace msomni::config
