// msomni-bench-train: training tokens/s of a model on the CPU backend, one rank, no
// transport. Loads a job config (configs/quickstart.toml by default), swaps its data
// sources for synthetic:// ones of the same modality and weight, optionally resizes the
// model, pre-generates a pool of micro-batches, runs warm-up steps and then timed optimizer
// steps of grad_accum micro-batches each. tokens/s counts input tokens (patches + text
// positions, micro_batch::input_tokens()) over the timed steps only.
//
// --dump DIR writes what the PyTorch twin (torch_fuyu_tiny.py) needs to train the very
// same run: the sizes, the initial parameters by name, the batch pool and the losses.
#include "config/config_loader.hpp"
#include "core/command_line.hpp"
#include "model/model_registry.hpp"
#include "builtin_models.hpp"
#include "rank_trainer.hpp"
#include "synthetic_source.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace msomni;

struct bench_options {
  std::string config = std::string(MSOMNI_SOURCE_DIR) + "/configs/quickstart.toml";
  int64_t d_model = 0, layers = 0, heads = 0, ff = 0, image = 0, patch = 0, frames = 0, seq = 0;
  int64_t micro_batch = 0, grad_accum = 0;
  int threads = 1;
  int64_t warmup = 3, steps = 10, pool = 8;
  std::string dump;
};

namespace limits = config::limits;

// A size flag: 0 keeps the config's value, anything else must be within the key's limit.
CLI::Validator config_or(limits::range<int64_t> limit) {
  const auto in = command_line::within(limit);
  return CLI::Validator([in](std::string& v) { return v == "0" ? std::string() : in(v); },
                        "0 or " + in.get_description());
}

void add_flags(CLI::App& app, bench_options& o) {
  using command_line::add_number;
  using command_line::within;
  app.add_option("--config", o.config, "the job config (its data sources become synthetic ones)")
      ->type_name("FILE")
      ->capture_default_str();
  const std::pair<const char*, std::pair<int64_t*, limits::range<int64_t>>> sizes[] = {
      {"--d-model", {&o.d_model, limits::model::d_model}},       {"--layers", {&o.layers, limits::model::n_layers}},
      {"--heads", {&o.heads, limits::model::n_heads}},           {"--ff", {&o.ff, limits::model::d_ff}},
      {"--image", {&o.image, limits::model::image_size}},        {"--patch", {&o.patch, limits::model::patch_size}},
      {"--frames", {&o.frames, limits::model::video_frames}},    {"--seq", {&o.seq, limits::model::max_seq_len}},
      {"--micro-batch", {&o.micro_batch, limits::training::micro_batch}},
      {"--grad-accum", {&o.grad_accum, limits::training::grad_accum}},
  };
  for (const auto& [flag, target] : sizes)
    app.add_option(flag, *target.first, "replaces the config's value (0: keep it)")
        ->transform(config_or(target.second));
  add_number(app, "--threads", o.threads, limits::range<int64_t>{1, limits::training::threads.max},
             "compute threads (as training.threads)");
  add_number(app, "--warmup", o.warmup, limits::range<int64_t>{0, limits::training::steps.max},
             "untimed steps first");
  add_number(app, "--steps", o.steps, limits::training::steps, "timed optimizer steps");
  add_number(app, "--pool", o.pool, limits::range<int64_t>{1, 1 << 16}, "pre-generated micro-batches");
  app.add_option("--dump", o.dump, "write what the PyTorch twin (torch_fuyu_tiny.py) needs to train the same run")
      ->type_name("DIR");
}

// The config with the requested sizes and synthetic sources in place of the data files.
config::job_config bench_config(const bench_options& o) {
  config::job_config cfg = config::load_file(o.config);
  auto set = [](int64_t& field, int64_t value) {
    if (value > 0) field = value;
  };
  set(cfg.model.d_model, o.d_model);
  set(cfg.model.n_layers, o.layers);
  set(cfg.model.n_heads, o.heads);
  set(cfg.model.d_ff, o.ff);
  set(cfg.model.image_size, o.image);
  set(cfg.model.patch_size, o.patch);
  set(cfg.model.video_frames, o.frames);
  set(cfg.model.max_seq_len, o.seq);
  set(cfg.training.micro_batch, o.micro_batch);
  set(cfg.training.grad_accum, o.grad_accum);
  for (auto& s : cfg.data.sources)
    s.uri = s.kind == modality::text ? "synthetic://text" : "synthetic://shapes";
  if (cfg.data.sources.empty())
    cfg.data.sources.push_back({"shapes", "synthetic://shapes", 1.0, modality::image});
  return cfg;
}

template <typename Vector>  // std::vector or std::pmr::vector
void write_raw(std::ofstream& out, const Vector& v) {
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(v[0])));
}

// The files torch_fuyu_tiny.py reads: meta.txt (key value), params.txt (name offset size
// decay shape...) with params.bin (flat float32), batches.bin (per batch: patches f32,
// patch_counts i32, tokens i32, loss_mask u8).
void dump_run(const std::filesystem::path& dir, const config::job_config& cfg, const bench_options& o,
              model::trainable_model& m, const std::vector<model::micro_batch>& pool,
              const rank_worker::trainer_settings& ts) {
  std::filesystem::create_directories(dir);
  const model::micro_batch& b0 = pool.front();
  std::ofstream meta(dir / "meta.txt");
  meta << "d_model " << cfg.model.d_model << "\nlayers " << cfg.model.n_layers << "\nheads "
       << cfg.model.n_heads << "\nd_ff " << cfg.model.d_ff << "\nvocab " << cfg.model.vocab_size
       << "\nmax_seq_len " << cfg.model.max_seq_len << "\nbatch " << b0.batch << "\nmax_patches "
       << b0.max_patches << "\npatch_dim " << b0.patch_dim << "\ntext_len " << b0.text_len
       << "\npool " << pool.size() << "\ngrad_accum " << ts.grad_accum << "\nlr " << ts.optimizer.lr
       << "\nbeta1 " << ts.optimizer.beta1 << "\nbeta2 " << ts.optimizer.beta2 << "\neps "
       << ts.optimizer.eps << "\nweight_decay " << ts.optimizer.weight_decay << "\ngrad_clip "
       << ts.optimizer.grad_clip << "\nthreads " << o.threads << "\nwarmup " << o.warmup
       << "\nsteps " << o.steps << "\n";
  std::ofstream names(dir / "params.txt");
  for (const auto& p : m.parameters()) {
    names << p.name << ' ' << p.offset << ' ' << p.size << ' ' << (p.weight_decay ? 1 : 0);
    for (int64_t s : p.shape) names << ' ' << s;
    names << '\n';
  }
  std::vector<float> params(static_cast<size_t>(m.parameter_count()));
  m.copy_to_host(model::buffer_role::parameters, params);
  std::ofstream pbin(dir / "params.bin", std::ios::binary);
  write_raw(pbin, params);
  std::ofstream bbin(dir / "batches.bin", std::ios::binary);
  for (const auto& mb : pool) {
    write_raw(bbin, mb.patches);
    write_raw(bbin, mb.patch_counts);
    write_raw(bbin, mb.tokens);
    write_raw(bbin, mb.loss_mask);
  }
}

int run(const bench_options& o) {
  const config::job_config cfg = bench_config(o);
  model::model_registry registry;
  models::register_builtin_models(registry);
  model::model_context ctx;
  ctx.config = cfg.model;
  ctx.seed = static_cast<uint64_t>(cfg.training.seed);
  ctx.device = model::compute_device::cpu;
  ctx.cpu_threads = o.threads;
  auto m = model::create_model(ctx, registry, std::filesystem::path(cfg.source_path).parent_path().string());

  rank_worker::synthetic_source source(cfg, rank_worker::data_slot{0, 1, 1, cfg.training.micro_batch});
  std::vector<model::micro_batch> pool;
  for (int64_t i = 0; i < o.pool; ++i) pool.push_back(source.next());
  const rank_worker::trainer_settings ts = rank_worker::settings_from(cfg);
  if (!o.dump.empty()) dump_run(o.dump, cfg, o, *m, pool, ts);

  // One optimizer step exactly as rank_trainer takes it with one rank (constant lr).
  size_t next = 0;
  int64_t tokens = 0;
  std::vector<double> losses;
  auto step = [&] {
    m->zero_gradients();
    double loss_sum = 0;
    int64_t targets = 0;
    for (int64_t k = 0; k < ts.grad_accum; ++k) {
      const model::micro_batch& mb = pool[next++ % pool.size()];
      const model::loss_report r = m->forward_backward(mb, 1.0f / static_cast<float>(ts.grad_accum));
      tokens += r.input_tokens;
      loss_sum += r.loss;
      targets += r.target_tokens;
    }
    m->optimizer_step(ts.optimizer);
    losses.push_back(loss_sum / static_cast<double>(ts.grad_accum));
  };
  for (int64_t i = 0; i < o.warmup; ++i) step();
  tokens = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < o.steps; ++i) step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const model::micro_batch& b0 = pool.front();
  std::printf("model %s params %lld d_model %lld layers %lld heads %lld d_ff %lld batch %lld seq %lld "
              "(patches %lld + text %lld) grad_accum %lld threads %d\n",
              m->name().c_str(), static_cast<long long>(m->parameter_count()),
              static_cast<long long>(cfg.model.d_model), static_cast<long long>(cfg.model.n_layers),
              static_cast<long long>(cfg.model.n_heads), static_cast<long long>(cfg.model.d_ff),
              static_cast<long long>(b0.batch), static_cast<long long>(b0.max_patches + b0.text_len),
              static_cast<long long>(b0.max_patches), static_cast<long long>(b0.text_len),
              static_cast<long long>(ts.grad_accum), o.threads);
  std::printf("losses");
  for (double l : losses) std::printf(" %.6f", l);
  std::printf("\nsteps %lld seconds %.4f step_ms %.3f tokens %lld tokens_per_s %.1f\n",
              static_cast<long long>(o.steps), seconds, 1e3 * seconds / static_cast<double>(o.steps),
              static_cast<long long>(tokens), static_cast<double>(tokens) / seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bench_options o;
  CLI::App app{"Training tokens/s of a model on the CPU backend, one rank, no transport.", "msomni-bench-train"};
  command_line::set_conventions(app);
  add_flags(app, o);
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "msomni-bench-train: " << e.what() << "\n";
    return 1;
  }
}
