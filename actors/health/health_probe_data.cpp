// Config and data probes: the loaded config's batch arithmetic and model, each source's
// shards listed and one (quick) or a few (full) samples decoded by the pipeline's decoder.
#include "health_probes.hpp"

#include "fuyu_tiny/fuyu_tiny.hpp"
#include "fuyu_tiny/fuyu_tiny_layout.hpp"
#include "media_decoder.hpp"
#include "media_format.hpp"
#include "member_reads.hpp"
#include "sample.hpp"
#include "remote_io.hpp"
#include "remote_storage.hpp"
#include "source_probe.hpp"
#include "storage.hpp"
#include "tar_sample_assembler.hpp"

#include "config/config_loader.hpp"
#include "config/generated_datasets.hpp"
#include "core/log.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <chrono>
#include <filesystem>

namespace msomni::health {

namespace fs = std::filesystem;

std::optional<model::memory_estimate> estimate_model_memory(const config::job_config& cfg, std::string& why) {
  if (cfg.model.name != "fuyu-tiny") {
    why = "model \"" + cfg.model.name + "\" comes from a plugin: its estimate needs building it (msomni-run --dry-run prints it)";
    return std::nullopt;
  }
  try {
    // The sum fuyu_tiny::estimate_memory makes, from the layout alone (no buffer allocated,
    // so a model too big for this machine is judged, not built).
    const auto layout = models::make_fuyu_layout(cfg.model);
    const int64_t mb = cfg.training.micro_batch, seq = cfg.model.max_seq_len;
    model::memory_estimate e;
    const int64_t bytes = int64_t(sizeof(float)) * layout.total;
    e.parameter_bytes = bytes;
    e.gradient_bytes = bytes;
    e.optimizer_bytes = 2 * bytes;
    const int64_t inputs = mb * layout.dims.max_patches * layout.dims.patch_dim + mb * seq * 3;
    e.activation_bytes = int64_t(sizeof(float)) * (models::fuyu_activation_floats(layout.dims, mb, seq) + inputs);
    return e;
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
}

int64_t ranks_on_this_node(const config::job_config& cfg, const std::string& node) {
  const int64_t replicas = cfg.elasticity.replicas;
  if (cfg.cluster.nodes.empty()) return replicas;
  const int64_t nodes = int64_t(cfg.cluster.nodes.size());
  int64_t slots = cfg.cluster.nodes.front().slots;
  for (const auto& n : cfg.cluster.nodes)
    if (n.name == node) slots = n.slots;
  return std::min<int64_t>(slots, (replicas + nodes - 1) / nodes);
}

namespace {

using clock_type = std::chrono::steady_clock;

// Decodes `want` samples of the first shards of one local source, trying at most
// refused_tries_max more past the ones it refuses (so that one bad sample first in a shard does
// not hide a usable source).
constexpr uint64_t refused_tries_max = 16;

// One sample of a shard, its members read one by one, as the reader assembles and judges it.
data::raw_sample read_sample(const data::byte_source& file, const std::string& shard, const data::shard_sample& smp,
                             modality kind, uint64_t max_bytes) {
  data::raw_sample start;
  start.kind = kind;
  start.key = shard + "/" + smp.key;
  data::raw_sample_assembler sample(std::move(start));
  const data::sample_reads plan = data::plan_reads(smp, kind, max_bytes);
  if (plan.too_large) return std::move(sample).too_large(*plan.too_large, max_bytes);
  data::read_members(file, plan, sample);  // a member cut short counts as absent
  return std::move(sample).finish();
}

decode_fact decode_source(const data::storage& st, const config::data_source& src, const fs::path& path,
                          uint64_t max_bytes, uint64_t want) {
  decode_fact f;
  f.source = src.name;
  const auto shards = st.list_shards(path.string());
  if (shards.empty()) {
    f.problem = "no shard in " + path.string();
    return f;
  }
  data::media_decoder decoder({32, 2, 64});
  double total_ms = 0;
  for (const auto& shard_path : shards) {
    const auto file = st.open(shard_path);
    const std::string shard = fs::path(shard_path).filename().string();
    if (!file) {
      f.problem = "cannot open " + shard_path;
      return f;
    }
    const auto samples = data::group_samples(data::list_tar(*file));
    for (const auto& smp : samples) {
      const data::raw_sample s = read_sample(*file, shard, smp, src.kind, max_bytes);
      // A refused sample is counted and the probe goes on: training skips it too.
      const auto refuse = [&](std::string why) {
        if (f.samples_refused++ == 0) f.refused_key = s.key, f.refused_reason = std::move(why);
      };
      if (s.bad) {
        refuse(std::string("not a usable sample: ") + data::to_string(s.reason) + " (" + s.cause + ")");
      } else {
        bool decoded = true;
        if (src.kind != modality::text) {
          const auto t0 = clock_type::now();
          const data::decoded_sample d = decoder.decode(s, src.kind == modality::video);
          total_ms += std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
          if (d.bad) refuse(std::string(data::to_string(d.reason)) + ": " + d.cause), decoded = false;
        }
        if (decoded && f.sample_key.empty()) f.sample_key = s.key;
        if (decoded) ++f.samples_decoded;
      }
      if (f.samples_decoded >= want || f.samples_refused >= refused_tries_max) break;
    }
    if (f.samples_decoded >= want || f.samples_refused >= refused_tries_max) break;
  }
  f.decode_ms = total_ms;
  if (f.samples_decoded == 0)
    f.problem = f.samples_refused > 0 ? "none of the " + std::to_string(f.samples_refused) + " samples tried decodes"
                                      : "no sample found in " + std::to_string(shards.size()) + " shard(s)";
  return f;
}

}  // namespace

void probe_config_and_data(const config::job_config& cfg, const health_options& o, const add_fn& add) {
  const auto& t = cfg.training;
  add(judge_problems("config.schema", {}, std::to_string(cfg.resolved_values.size()) + " keys"));
  {
    // The loader refuses a config whose batch does not divide; this states what it resolved.
    auto r = judge_problems("config.batch", {}, std::to_string(t.global_batch));
    r.reason = "global_batch " + std::to_string(t.global_batch) + " = micro_batch " + std::to_string(t.micro_batch) +
               " x replicas " + std::to_string(cfg.elasticity.replicas) + " x grad_accum " + std::to_string(t.grad_accum);
    add(r);
  }
  {
    std::string why;
    const auto e = estimate_model_memory(cfg, why);
    if (e) {
      auto r = judge_problems("config.model", {}, std::to_string(e->parameter_bytes / 4));
      r.unit = "parameters";
      r.reason = cfg.model.name + " built in; its shape is valid";
      add(r);
    } else if (cfg.model.name == "fuyu-tiny") {
      add(judge_problems("config.model", {config::located(cfg, "model.d_model", why).to_string()}, ""));
    } else {
      add(skipped("config.model", why));
    }
  }
  data::set_remote_io(data::remote_io_of(cfg));  // s3:// and http(s):// sources
  const auto st = data::make_local_storage();
  const uint64_t max_bytes = uint64_t(cfg.io.max_sample_bytes);
  const uint64_t want = o.level == health_level::quick ? 1 : 8;
  if (!log::enabled(log::level::debug)) av_log_set_level(AV_LOG_QUIET);
  for (size_t i = 0; i < cfg.data.sources.size(); ++i) {
    const auto& src = cfg.data.sources[i];
    const std::string list_id = "data.source." + src.name, decode_id = "data.decode." + src.name;
    if (src.uri.rfind("synthetic://", 0) == 0) {
      add(skipped(list_id, src.uri + " is made in memory: no shard to list"));
      add(skipped(decode_id, src.uri + " is made in memory: nothing to decode"));
      continue;
    }
    const auto path = config::resolve_data_path(cfg, src.uri);
    std::error_code ec;
    if (src.uri.rfind("generated://", 0) == 0 && !fs::exists(path, ec)) {
      add(skipped(list_id, src.uri + " is rendered by msomni-run at its start (not in " + path.string() + " yet)"));
      add(skipped(decode_id, src.uri + " is not rendered yet"));
      continue;
    }
    // The environment check's own rule (a path or pattern that names shards, a usable sample).
    config::job_config one = cfg;
    one.data.sources = {src};
    one.model.plugin.clear();
    one.checkpoint.dir = "checkpoints";
    one.cluster.control_port = one.cluster.metrics_port = 0;
    std::vector<std::string> problems;
    const auto usable = [&](const fs::path& p, modality kind, uint64_t mx) {
      return data::usable_source_problem(*st, p.string(), kind, mx);
    };
    for (const auto& e : config::check_environment(one, usable)) {
      auto located = config::located(cfg, "data.sources[" + std::to_string(i) + "].uri", e.reason);
      problems.push_back(located.to_string());
    }
    std::vector<std::string> shards;
    if (problems.empty()) try {
        shards = st->list_shards(path.string());
      } catch (const std::exception& e) {
        problems.push_back(e.what());
      }
    auto listed = judge_problems(list_id, problems, std::to_string(shards.size()));
    if (problems.empty()) {
      listed.unit = "shards";
      listed.reason = "listed in " + path.string() + ", a usable sample found";
    }
    add(listed);
    if (!problems.empty()) {
      add(skipped(decode_id, "the source's shards cannot be listed"));
      continue;
    }
    add(judge_decode(decode_source(*st, src, path, max_bytes, want)));
  }
}

}  // namespace msomni::health
