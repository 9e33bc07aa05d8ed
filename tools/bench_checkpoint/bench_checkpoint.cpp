// Checkpoint benchmark: save throughput of one rank's state against (a) a plain sequential
// write + fsync of the same bytes to the same disk (the limit) and (b) torch.save of the same
// tensors in /usr/bin/python3 with the same thread count; and the training time lost per
// asynchronous save as a fraction of a step. Prints a markdown table for BENCHMARKS.md.
//   bench_checkpoint [--mb 256] [--threads 2] [--reps 3] [--dir /tmp] [--level 1] (see --help)
#include "checkpoint_store.hpp"
#include "checkpoint_writer.hpp"
#include "core/command_line.hpp"
#include "core/json_text.hpp"
#include "core/process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

using namespace msomni::ckpt;
namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A model-like state: a few large weight matrices, optimizer moments, small blobs.
rank_state make_model_state(size_t mb) {
  rank_state s;
  auto rng = msomni::rng_stream::derive(7, "bench.ckpt");
  const size_t total_floats = mb * (1 << 20) / 4;
  const size_t per = total_floats / 16;
  for (int i = 0; i < 16; ++i) {
    std::vector<float> v(per);
    // Weights around 0.02 like a trained init: normal noise barely compresses, as in life.
    for (auto& x : v) x = rng.normal() * 0.02f;
    const char* kind = i < 8 ? "param/" : "optim/";
    s.put_tensor(std::string(kind) + "t" + std::to_string(i), {static_cast<int64_t>(per / 256), 256},
                 std::move(v));
  }
  s.put_rng("rng/cpu", rng);
  s.put_u64("counter/step", 1);
  return s;
}

double plain_write(const rank_state& s, const fs::path& p) {
  const double t0 = now_s();
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (const auto& t : s.tensors) {
    const char* d = reinterpret_cast<const char*>(t.values.data());
    size_t left = t.values.size() * 4;
    while (left > 0) {
      const ssize_t w = ::write(fd, d, std::min<size_t>(left, 1 << 20));
      if (w <= 0) { std::perror("write"); std::exit(1); }
      d += w;
      left -= static_cast<size_t>(w);
    }
  }
  ::fsync(fd);
  ::close(fd);
  const double dt = now_s() - t0;
  fs::remove(p);
  return dt;
}

// One "training step": memory-bound float work on its own buffer, like an optimizer step.
void train_step(std::vector<float>& buf, int passes) {
  for (int p = 0; p < passes; ++p)
    for (auto& x : buf) x = x * 0.999f + 0.001f;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mb = 256;
  int threads = 2, reps = 3, level = 1;
  std::string dir = "/tmp";
  namespace limits = msomni::config::limits;
  using msomni::command_line::add_number;
  CLI::App app{"Checkpoint save throughput against a plain write + fsync and torch.save; prints a markdown "
               "table for BENCHMARKS.md.",
               "bench_checkpoint"};
  msomni::command_line::set_conventions(app);
  add_number(app, "--mb", mb, limits::range<int64_t>{1, 1 << 20}, "size of the rank state, MB");
  add_number(app, "--threads", threads, limits::checkpoint::zstd_threads,
             "compression threads (as checkpoint.zstd_threads)");
  add_number(app, "--reps", reps, limits::range<int64_t>{1, 1000}, "repetitions (the median is reported)");
  app.add_option("--dir", dir, "where the files go")->type_name("DIR")->capture_default_str();
  add_number(app, "--level", level, limits::checkpoint::zstd_level, "zstd level (as checkpoint.zstd_level)");
  if (const auto rc = msomni::command_line::parse(app, argc, argv)) return *rc;
  const fs::path work = fs::path(dir) / ("msomni-bench-ckpt-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const rank_state state = make_model_state(mb);
  const double bytes = static_cast<double>(state.raw_bytes());
  std::cerr << "state: " << bytes / 1e6 << " MB in " << state.tensors.size() << " tensors\n";

  // CPU cost alone: encode (compress + checksums) into a sink that drops the bytes.
  struct null_sink : byte_sink {
    void write(const void*, size_t) override {}
  } devnull;
  std::vector<double> encode_only;
  for (int lvl : {level, -3}) {
    shard_encoder enc({lvl, threads});
    enc.encode(state, 0, 0, devnull);  // warm the buffers
    const double t0 = now_s();
    enc.encode(state, 0, 0, devnull);
    encode_only.push_back(now_s() - t0);
  }
  std::vector<double> plain, ours, ours_fast, cleanups;
  // The ranks' states as save_full takes them, built once: the timed save writes them, it
  // does not copy 268 MB into a fresh vector first.
  const std::vector<rank_state> ranks{state};
  for (int r = 0; r < reps; ++r) {
    plain.push_back(plain_write(state, work / "plain.bin"));
    for (auto [lvl, out] : {std::pair{level, &ours}, std::pair{-3, &ours_fast}}) {
      checkpoint_store store(work / "ckpt", {1, {lvl, threads}, nullptr});
      // As a job saves: the shard written and fsynced, then the commit (manifest, rename,
      // `latest`); the ranks go on from there, and retention (deleting the older checkpoint)
      // runs after, off their path; it is timed apart.
      const checkpoint_meta meta{static_cast<uint64_t>(r + 1), 0, 1, 0, 1};
      const double t0 = now_s();
      {
        shard_encoder enc({lvl, threads});
        store.commit_durable(meta, {store.write_shard(meta, 0, ranks[0], enc)});
      }
      out->push_back(now_s() - t0);
      const double t1 = now_s();
      store.cleanup();
      if (out == &ours) cleanups.push_back(now_s() - t1);
    }
  }
  uint64_t on_disk = 0;
  for (const auto& e : fs::recursive_directory_iterator(work / "ckpt"))
    if (e.is_regular_file()) on_disk += e.file_size();

  // torch.save of the same tensors: hand Python the raw bytes and shapes.
  {
    std::ofstream raw(work / "tensors.raw", std::ios::binary), shapes(work / "shapes.json");
    nlohmann::json list = nlohmann::json::array();  // [[name, [rows, cols]], ...]
    for (const auto& t : state.tensors) {
      raw.write(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
      list.push_back(nlohmann::json::array({t.name, nlohmann::json::array({t.shape[0], t.shape[1]})}));
    }
    shapes << msomni::json_text(list);
  }
  std::vector<double> torch_s;
  try {
    msomni::process::spawn_options o;
    o.out = msomni::process::stream::pipe();
    auto py = msomni::process::spawn({"/usr/bin/python3", std::string(MSOMNI_BENCH_DIR) + "/bench_torch_save.py",
                                      (work / "tensors.raw").string(), (work / "shapes.json").string(),
                                      (work / "torch.pt").string(), std::to_string(threads), std::to_string(reps)},
                                     o);
    std::string out = msomni::process::read_to_end(py.stdout_fd());
    py.wait();
    // The script's last line is {"seconds":[...],"bytes":N}; there is none when torch is absent.
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const auto reply = nlohmann::json::parse(out.substr(out.find_last_of('\n') + 1), nullptr, false);
    if (reply.is_object() && reply.contains("seconds") && reply["seconds"].is_array())
      for (const auto& v : reply["seconds"])
        if (v.is_number()) torch_s.push_back(v.get<double>());
  } catch (const msomni::process::spawn_error& e) {
    std::cerr << "bench_checkpoint: torch.save peer not run: " << e.what() << "\n";
  }
  fs::remove(work / "tensors.raw");

  // Async: steps of fixed work; every 16th step boundary hands a snapshot to the writer.
  checkpoint_store store(work / "async", {2, {level, threads}, nullptr});
  std::vector<float> act(16 << 20, 1.0f);  // 64 MB the "step" streams over
  auto run_steps = [&](int steps, checkpoint_writer* w, double& step_s) {
    const double t0 = now_s();
    for (int s = 0; s < steps; ++s) {
      train_step(act, 8);
      if (w && s % 16 == 0) {
        if (w->submit_copy({static_cast<uint64_t>(s + 1), 0, 1, 0, 1}, state) ==
            checkpoint_writer::submit_result::refused_busy)
          std::cerr << "  (save refused at step " << s << ": previous one still in flight)\n";
      }
    }
    if (w) w->wait_idle();
    step_s = (now_s() - t0) / steps;
  };
  double base_step = 0, async_step = 0;
  constexpr int steps = 32;
  run_steps(2, nullptr, base_step);  // warm up
  run_steps(steps, nullptr, base_step);
  std::mutex mu;
  std::vector<save_outcome> outs;
  checkpoint_writer writer(store, 0, [&](const save_outcome& o) {
    std::lock_guard lk(mu);
    outs.push_back(o);
  });
  // The writer's two snapshot buffers are fresh memory on their first two saves (page faults
  // on every page); a training run saves for hours with them warm. Two saves warm them, then
  // the measured run counts only its own.
  run_steps(steps, &writer, async_step);
  const auto warm = writer.metrics();
  run_steps(steps, &writer, async_step);
  const auto m = writer.metrics();
  const double saves = static_cast<double>(m.accepted - warm.accepted);
  const double blocked_per_save = static_cast<double>(m.blocked_ns_total - warm.blocked_ns_total) / 1e9 / saves;
  const double slowdown_per_save = (async_step - base_step) * steps / saves;

  const double mp = median(plain), mo = median(ours), mf = median(ours_fast);
  std::printf("| measure | value |\n|---|---|\n");
  std::printf("| state size | %.0f MB, %zu tensors, fp32 noise ~N(0, 0.02) |\n", bytes / 1e6,
              state.tensors.size());
  std::printf("| encode only (compress + XXH3, no I/O), zstd %d / -3 | %.2f / %.2f GB/s |\n", level,
              bytes / encode_only[0] / 1e9, bytes / encode_only[1] / 1e9);
  std::printf("| plain write+fsync (limit) | %.3f s, %.2f GB/s |\n", mp, bytes / mp / 1e9);
  std::printf("| msomni save to its commit, zstd %d, %d threads | %.3f s, %.2f GB/s, ratio to limit %.2f |\n",
              level, threads, mo, bytes / mo / 1e9, mp / mo);
  std::printf("| msomni save to its commit, zstd -3, %d threads | %.3f s, %.2f GB/s, ratio to limit %.2f |\n",
              threads, mf, bytes / mf / 1e9, mp / mf);
  std::printf("| then retention after the commit (the older checkpoint deleted), off the ranks' path | %.3f s |\n",
              median(cleanups));
  if (!torch_s.empty()) {
    const double mt = median(torch_s);
    std::printf("| torch.save + fsync, %d threads | %.3f s, %.2f GB/s |\n", threads, mt, bytes / mt / 1e9);
    std::printf("| msomni (zstd %d) / torch.save speed | %.2f |\n", level, mt / mo);
  }
  std::printf("| compressed/raw (zstd %d and -3 together on disk at the end) | %.3f |\n", level,
              static_cast<double>(on_disk) / bytes);
  std::printf("| step time without saves | %.3f s |\n", base_step);
  std::printf("| async (snapshot buffers warm, after 2 saves): saves taken / refused | %llu / %llu |\n",
              static_cast<unsigned long long>(m.accepted - warm.accepted),
              static_cast<unsigned long long>(m.refused_busy - warm.refused_busy));
  std::printf("| async: caller blocked per save (snapshot copy) | %.3f s = %.3f of a step |\n",
              blocked_per_save, blocked_per_save / base_step);
  std::printf("| async: wall-clock slowdown per save (incl. writer competing for 2 cores) | %.3f s = %.3f of a step |\n",
              slowdown_per_save, slowdown_per_save / base_step);
  std::printf("| sync save for comparison | %.3f s = %.2f steps |\n", mo, mo / base_step);
  fs::remove_all(work);
  return 0;
}
