// Remote-source throughput: one image source read at a uri (a local directory, http(s):// or
// s3://), by the reader's own path (sample_fetcher: one read per sample, nothing hinted), by
// the same path with the read-ahead hints own_reader gives (one epoch, start to end: the
// requests, bytes and runs it costs against the shards' bytes), and by the in-thread data
// pipeline (reading and decoding into batches). Prints one JSON line: the index time,
// samples/s and MB/s of each, and the remote requests, bytes and retries by cause.
// bench_remote.sh runs it against local shards and the same shards behind a delayed,
// rate-limited and faulty HTTP server.
#include "data_pipeline.hpp"
#include "remote_io.hpp"
#include "source_reader.hpp"
#include "storage.hpp"

#include "config/job_config.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>

using namespace msomni;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Remote-source throughput of one image source (see tools/bench_remote/bench_remote.sh)",
               "msomni-bench-remote"};
  std::string uri, label = "run", cache_dir;
  uint64_t samples = 400, batches = 50, cache_bytes = 0;
  double timeout_ms = 30000, backoff_max_ms = 5000;
  int64_t prefetch = config::io_section{}.remote_prefetch;
  app.add_option("--uri", uri, "the source: DIR, http(s)://HOST/PATH/ or s3://BUCKET/PREFIX")->required();
  app.add_option("--label", label, "names the result line");
  app.add_option("--samples", samples, "samples read by the reader's path")->capture_default_str();
  app.add_option("--batches", batches, "batches of 4 built by the in-thread pipeline")->capture_default_str();
  app.add_option("--cache-dir", cache_dir, "io.cache_dir");
  app.add_option("--cache-bytes", cache_bytes, "io.cache_bytes");
  app.add_option("--timeout-ms", timeout_ms, "io.remote_request_timeout_ms")->capture_default_str();
  app.add_option("--backoff-max-ms", backoff_max_ms, "io.remote_backoff_max_ms")->capture_default_str();
  app.add_option("--prefetch", prefetch, "io.remote_prefetch")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  config::job_config cfg;
  cfg.training.micro_batch = 4;
  cfg.training.seed = 11;
  cfg.model.image_size = 32;
  cfg.model.patch_size = 8;
  cfg.model.video_frames = 2;
  cfg.model.max_seq_len = 96;
  cfg.io.prefetch_depth = 2;
  cfg.io.cache_dir = cache_dir;
  cfg.io.cache_bytes = int64_t(cache_bytes);
  cfg.io.remote_request_timeout_ms = timeout_ms;
  cfg.io.remote_backoff_max_ms = backoff_max_ms;
  cfg.io.remote_prefetch = prefetch;
  cfg.data.sources = {{"images", uri, 1.0, modality::image}};
  const auto setup = data::make_pipeline_setup(cfg);  // also sets this process's remote io
  const auto st = data::make_local_storage();
  auto& c = data::remote_counters();

  const auto t0 = std::chrono::steady_clock::now();
  auto sources = std::make_shared<data::source_list>();
  sources->emplace_back(0, setup.sources[0], setup.seed, true, *st);
  const double index_s = seconds_since(t0);
  const uint64_t per_epoch = (*sources)[0].samples_per_epoch();

  const uint64_t req0 = c.requests, bytes0 = c.bytes;
  data::sample_fetcher fetcher(sources, st);
  uint64_t payload = 0, bad = 0;
  const auto t1 = std::chrono::steady_clock::now();
  for (uint64_t d = 0; d < samples; ++d) {
    const auto s = fetcher.read(0, d, true);
    payload += s.media.size() + s.caption.size();
    bad += s.bad;
  }
  const double fetch_s = seconds_since(t1);
  const uint64_t fetch_requests = c.requests - req0, fetch_bytes = c.bytes - bytes0;

  // One epoch read start to end with the hints own_reader gives before each read.
  uint64_t shard_bytes = 0;
  for (const auto& sh : (*sources)[0].shards())
    if (const auto f = st->open(sh.path)) shard_bytes += f->size();
  const uint64_t req1 = c.requests, bytes1 = c.bytes, runs1 = c.prefetch_issued, run_reads1 = c.prefetch_samples;
  data::sample_fetcher ahead(sources, st);
  std::deque<uint64_t> upcoming;
  for (uint64_t d = 0; d < per_epoch; ++d) upcoming.push_back(d);
  uint64_t ahead_payload = 0;
  const auto ta = std::chrono::steady_clock::now();
  while (!upcoming.empty()) {
    ahead.hint_ahead(0, upcoming);
    const auto s = ahead.read(0, upcoming.front(), true);
    upcoming.pop_front();
    ahead_payload += s.media.size() + s.caption.size();
    bad += s.bad;
  }
  const double ahead_s = seconds_since(ta);
  const uint64_t ahead_requests = c.requests - req1, ahead_bytes = c.bytes - bytes1;
  const uint64_t ahead_runs = c.prefetch_issued - runs1, ahead_run_reads = c.prefetch_samples - run_reads1;

  const uint64_t req2 = c.requests, runs2 = c.prefetch_issued, run_reads2 = c.prefetch_samples;
  data::data_pipeline pipe(setup, {0, 1, 1, 4}, st);
  const auto t2 = std::chrono::steady_clock::now();
  (void)pipe.next_batch();
  const double first_s = seconds_since(t2);  // the first batch waits for the first run's round trip
  for (uint64_t b = 1; b < batches; ++b) (void)pipe.next_batch();
  const double pipe_s = seconds_since(t2);
  const double steady = batches > 1 ? double((batches - 1) * 4) / std::max(1e-9, pipe_s - first_s) : 0.0;
  const uint64_t pipe_requests = c.requests - req2, pipe_runs = c.prefetch_issued - runs2,
                 pipe_run_reads = c.prefetch_samples - run_reads2;

  std::printf(
      "{\"label\":\"%s\",\"samples_per_epoch\":%llu,\"index_s\":%.3f,\"fetch_samples\":%llu,\"fetch_s\":%.3f,"
      "\"fetch_samples_per_s\":%.1f,\"fetch_payload_mb_per_s\":%.2f,\"fetch_requests\":%llu,\"fetch_bytes\":%llu,"
      "\"payload_bytes\":%llu,\"bad\":%llu,\"pipeline_batches\":%llu,\"pipeline_s\":%.3f,"
      "\"pipeline_samples_per_s\":%.1f,\"pipeline_first_batch_s\":%.3f,\"pipeline_steady_samples_per_s\":%.1f,"
      "\"pipeline_requests\":%llu,\"pipeline_runs\":%llu,\"pipeline_run_reads\":%llu,"
      "\"ahead_samples\":%llu,\"ahead_s\":%.3f,\"ahead_samples_per_s\":%.1f,\"ahead_requests\":%llu,"
      "\"ahead_bytes\":%llu,\"ahead_runs\":%llu,\"ahead_run_reads\":%llu,\"ahead_payload_bytes\":%llu,"
      "\"shard_bytes\":%llu,\"requests\":%llu,\"retries\":{\"server_error\":%llu,\"throttled\":%llu,"
      "\"reset\":%llu,\"timeout\":%llu,\"short_body\":%llu},\"gave_up\":%llu}\n",
      label.c_str(), (unsigned long long)per_epoch, index_s, (unsigned long long)samples, fetch_s,
      double(samples) / fetch_s, double(payload) / fetch_s / 1e6, (unsigned long long)fetch_requests,
      (unsigned long long)fetch_bytes, (unsigned long long)payload, (unsigned long long)bad,
      (unsigned long long)batches, pipe_s, double(batches * 4) / pipe_s, first_s, steady,
      (unsigned long long)pipe_requests,
      (unsigned long long)pipe_runs, (unsigned long long)pipe_run_reads, (unsigned long long)per_epoch, ahead_s,
      double(per_epoch) / ahead_s, (unsigned long long)ahead_requests, (unsigned long long)ahead_bytes,
      (unsigned long long)ahead_runs, (unsigned long long)ahead_run_reads, (unsigned long long)ahead_payload,
      (unsigned long long)shard_bytes, (unsigned long long)c.requests.load(),
      (unsigned long long)c.retry_server.load(), (unsigned long long)c.retry_throttled.load(),
      (unsigned long long)c.retry_reset.load(), (unsigned long long)c.retry_timeout.load(),
      (unsigned long long)c.retry_short.load(), (unsigned long long)c.gave_up.load());
  return 0;
}
