// msomni-bench-data: samples/s of one rank's data path on generated shards, in three modes.
//   limit    - every sample of the sources read into memory first, then media_decoder
//              (libavcodec decode + libswscale resize + byte tokens) on N std::threads taking
//              samples from a shared counter, --passes times over the set: no reader, no
//              credits, no tensorizer. The decode limit.
//   inline   - data_pipeline (the in-thread reference: one thread reads, decodes, packs).
//   actors   - actor_pipeline with io.decode_workers = N on a CAF system of N threads.
//   pixels   - no timing: every sample's decoded RGB frames (full decode) written to --out
//              FILE back to back, in the limit's order, so pixel_check.py can compare them
//              with the PyTorch side's frames.
// Prints one line: "mode=... workers=N samples=S seconds=T samples_per_s=R".
#include "data_actors.hpp"
#include "data_pipeline.hpp"
#include "media_decoder.hpp"
#include "messages/catalog.hpp"
#include "config/job_config.hpp"
#include "core/command_line.hpp"
#include "storage.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace msomni;

namespace {

struct bench_options {
  std::string mode;
  std::string data_dir;
  int workers = 1;
  int64_t image_size = 112;
  int64_t patch_size = 16;
  int64_t video_frames = 1;
  int64_t max_seq_len = 320;
  int64_t batch = 16;
  uint64_t samples = 0;  // pipeline modes: samples to pull (rounded up to whole batches)
  bool videos = false;   // include DIR/videos
  std::string sources;   // comma-separated subset of images,text,videos (overrides --videos)
  int passes = 1;        // limit mode: decode every sample this many times
  std::string caf_policy = "sharing";  // actors mode: CAF scheduler policy (sharing | stealing)
  std::string out;                     // pixels mode: output file
};

struct source_info {
  std::string name;
  std::string dir;
  modality kind;
};

std::vector<source_info> sources_of(const bench_options& o) {
  const std::vector<source_info> all = {{"images", o.data_dir + "/images", modality::image},
                                        {"text", o.data_dir + "/text", modality::text},
                                        {"videos", o.data_dir + "/videos", modality::video}};
  const std::string want = o.sources.empty() ? (o.videos ? "images,text,videos" : "images,text") : o.sources;
  std::vector<source_info> out;
  for (const auto& s : all)
    if (("," + want + ",").find("," + s.name + ",") != std::string::npos) out.push_back(s);
  if (out.empty()) throw std::invalid_argument("--sources " + want + " names none of images,text,videos");
  return out;
}

// Every complete sample (media + caption, or caption alone for text) of one source's shards.
std::vector<data::raw_sample> load_samples(const source_info& src, const data::storage& st) {
  std::vector<data::raw_sample> out;
  for (const auto& shard : st.list_shards(src.dir)) {
    auto bytes = st.open(shard);
    if (!bytes) throw std::runtime_error("cannot open " + shard);
    const auto listing = data::list_tar(*bytes);
    std::map<std::string, data::raw_sample> by_key;
    for (const auto& m : listing.members) {
      const auto dot = m.name.rfind('.');
      if (dot == std::string::npos) continue;
      const std::string key = m.name.substr(0, dot), ext = m.name.substr(dot + 1);
      std::vector<uint8_t> buf(m.size);
      bytes->read_at(m.data_offset, buf.data(), buf.size());
      auto& s = by_key[key];
      s.key = shard + "/" + key;
      s.kind = src.kind;
      if (ext == "txt") s.caption.assign(buf.begin(), buf.end());
      else {
        s.media = std::move(buf);
        s.media_ext = ext;
      }
    }
    for (auto& [key, s] : by_key) {
      if (s.caption.empty() || (src.kind != modality::text && s.media.empty())) continue;
      out.push_back(std::move(s));
    }
  }
  return out;
}

config::job_config job_of(const bench_options& o, const std::vector<source_info>& srcs,
                          const data::storage& st) {
  config::job_config job;
  job.training.micro_batch = o.batch;
  job.training.seed = 7;
  job.model.image_size = o.image_size;
  job.model.patch_size = o.patch_size;
  job.model.video_frames = o.video_frames;
  job.model.max_seq_len = o.max_seq_len;
  job.io.decode_workers = o.workers;
  job.io.downgrade_video = false;  // full-quality decodes, the same work as the limit
  // Weights in proportion to each source's sample count, so the mix matches the limit's.
  for (const auto& s : srcs) {
    const double n = double(load_samples(s, st).size());
    job.data.sources.push_back({s.name, s.dir, n, s.kind});
  }
  return job;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_limit(const bench_options& o) {
  const auto st = data::make_local_storage();
  std::vector<data::raw_sample> all;
  for (const auto& s : sources_of(o)) {
    auto v = load_samples(s, *st);
    for (auto& r : v) all.push_back(std::move(r));
  }
  const data::decode_options dopts{int(o.image_size), int(o.video_frames),
                                   size_t(o.max_seq_len - o.video_frames * (o.image_size / o.patch_size) *
                                                              (o.image_size / o.patch_size))};
  std::atomic<uint64_t> bad{0};
  // The pipelines' decoders recycle their output buffers through a pixel_pool; so does the
  // limit (each decoded sample's pixels go straight back), the same decoder the same way.
  auto pixels = std::make_shared<data::pixel_pool>();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  // Each thread takes the next sample from a shared counter, so no thread idles while another
  // still has a slice left (static slices let a 2-thread limit end on one busy core).
  std::atomic<uint64_t> next{0};
  const uint64_t total = uint64_t(all.size()) * uint64_t(o.passes);
  for (int w = 0; w < o.workers; ++w) {
    threads.emplace_back([&] {
      data::media_decoder dec(dopts, pixels);
      for (uint64_t k = next++; k < total; k = next++) {
        data::decoded_sample out = dec.decode(all[size_t(k % all.size())], false);
        if (out.bad) ++bad;
        pixels->give(std::move(out.pixels));
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = seconds_since(t0);
  const double n = double(all.size()) * o.passes;
  std::printf("mode=limit workers=%d samples=%.0f seconds=%.4f samples_per_s=%.1f bad=%llu\n", o.workers, n, secs,
              n / secs, (unsigned long long)bad.load());
  return bad.load() == 0 ? 0 : 1;
}

int run_pixels(const bench_options& o) {
  const auto st = data::make_local_storage();
  const data::decode_options dopts{int(o.image_size), int(o.video_frames), size_t(o.max_seq_len)};
  data::media_decoder dec(dopts);
  std::FILE* f = std::fopen(o.out.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + o.out);
  uint64_t n = 0, bad = 0;
  for (const auto& s : sources_of(o))
    for (const auto& raw : load_samples(s, *st)) {
      const data::decoded_sample x = dec.decode(raw, false);
      if (x.bad) ++bad;
      const size_t want = size_t(o.video_frames) * size_t(o.image_size * o.image_size * 3);
      std::vector<uint8_t> frames(want, 0);
      std::copy_n(x.pixels.begin(), std::min(want, x.pixels.size()), frames.begin());
      std::fwrite(frames.data(), 1, frames.size(), f);
      ++n;
    }
  std::fclose(f);
  std::printf("mode=pixels samples=%llu bad=%llu out=%s\n", (unsigned long long)n, (unsigned long long)bad, o.out.c_str());
  return bad == 0 ? 0 : 1;
}

template <class Pipe>
uint64_t pull(Pipe& p, uint64_t samples) {
  uint64_t got = 0;
  while (got < samples) got += uint64_t(p.next_batch().kinds.size());
  return got;
}

int run_pipeline(const bench_options& o) {
  const auto st = data::make_local_storage();
  const auto srcs = sources_of(o);
  const auto setup = data::make_pipeline_setup(job_of(o, srcs, *st));
  uint64_t got = 0;
  double secs = 0;
  if (o.mode == "inline") {
    const auto t0 = std::chrono::steady_clock::now();
    data::data_pipeline p(setup, {0, 1, 1, setup.shape.batch});
    got = pull(p, o.samples);
    secs = seconds_since(t0);
  } else {
    caf::actor_system_config cfg;
    register_catalog(cfg);
    cfg.set("scheduler.max-threads", o.workers);
    // CAF's default work-stealing workers spin before sleeping; on cores shared with decoding
    // that spinning takes decode time. "sharing" (one queue, a condition variable) does not.
    cfg.set("scheduler.policy", o.caf_policy == "stealing" ? caf::atom("stealing") : caf::atom("sharing"));
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    caf::actor_system sys(cfg);
    const auto t0 = std::chrono::steady_clock::now();
    {
      data::actor_pipeline p(sys, setup, {0, 1, 1, setup.shape.batch});
      got = pull(p, o.samples);
      secs = seconds_since(t0);
    }
  }
  std::printf("mode=%s workers=%d samples=%llu seconds=%.4f samples_per_s=%.1f\n", o.mode.c_str(), o.workers,
              (unsigned long long)got, secs, double(got) / secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bench_options o;
  namespace limits = config::limits;
  using command_line::add_number;
  using command_line::within;
  CLI::App app{"Samples/s of one rank's data path on generated shards (modes: see the top of bench_data.cpp). "
               "Prints one line: mode=... workers=N samples=S seconds=T samples_per_s=R.",
               "msomni-bench-data"};
  command_line::set_conventions(app);
  app.add_option("--mode", o.mode, "limit | inline | actors | pixels")
      ->required()
      ->check(CLI::IsMember({"limit", "inline", "actors", "pixels"}));
  app.add_option("--data", o.data_dir, "a msomni-gen-dataset output directory")->type_name("DIR")->required();
  add_number(app, "--workers", o.workers, limits::io::decode_workers, "decode threads (as io.decode_workers)");
  app.add_option("--samples", o.samples, "pipeline modes: samples to pull (rounded up to whole batches)")
      ->transform(within<uint64_t>(1, uint64_t{1} << 40));
  app.add_option("--image-size", o.image_size, "as model.image_size")
      ->type_name("PX")
      ->transform(within(limits::model::image_size))
      ->capture_default_str();
  app.add_option("--patch-size", o.patch_size, "as model.patch_size")
      ->type_name("PX")
      ->transform(within(limits::model::patch_size))
      ->capture_default_str();
  add_number(app, "--video-frames", o.video_frames, limits::model::video_frames, "as model.video_frames");
  add_number(app, "--max-seq-len", o.max_seq_len, limits::model::max_seq_len, "as model.max_seq_len");
  add_number(app, "--batch", o.batch, limits::training::micro_batch,
             "samples per batch (as training.micro_batch)");
  app.add_option_function<std::string>(
         "--videos", [&o](const std::string& v) { o.videos = v == "1"; }, "1: include DIR/videos")
      ->check(CLI::IsMember({"0", "1"}))
      ->default_str("0");
  app.add_option("--sources", o.sources, "comma-separated subset of images,text,videos (overrides --videos)");
  add_number(app, "--passes", o.passes, limits::range<int64_t>{1, 1000000},
             "limit mode: decode every sample this many times");
  app.add_option("--caf-policy", o.caf_policy, "actors mode: CAF scheduler policy")
      ->check(CLI::IsMember({"sharing", "stealing"}))
      ->capture_default_str();
  app.add_option("--out", o.out, "pixels mode: output file")->type_name("FILE");
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  try {
    if (o.mode == "limit") return run_limit(o);
    if (o.mode == "pixels") {
      if (o.out.empty()) return command_line::refuse(app, "--out FILE is required for pixels mode");
      return run_pixels(o);
    }
    if (o.samples == 0) return command_line::refuse(app, "--samples N is required for pipeline modes");
    return run_pipeline(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "msomni-bench-data: %s\n", e.what());
    return 2;
  }
}
