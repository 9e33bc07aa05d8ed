// The counters of every remote request of this process, and their export as metrics (see
// remote_io.hpp).
#include "remote_io.hpp"

#include "metrics/metrics_registry.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace msomni::data {

remote_io_counters& remote_counters() {
  static remote_io_counters c;
  return c;
}

void watch_remote_io(const std::shared_ptr<metrics::metrics_registry>& registry) {
  if (!registry) return;
  struct watch {
    std::weak_ptr<metrics::metrics_registry> of;
    metrics::metrics_registry* raw = nullptr;
    std::unique_ptr<metrics::metrics_registry::refresher_handle> handle;
  };
  // Never destroyed: a handle outliving its registry must not deregister at exit.
  static auto* m = new std::mutex;
  static auto* watches_p = new std::vector<watch>;
  auto& watches = *watches_p;
  std::lock_guard lock(*m);
  for (auto& w : watches) {
    if (w.of.expired()) (void)w.handle.release();  // its registry is gone: nothing to deregister from
  }
  std::erase_if(watches, [](const watch& w) { return w.of.expired(); });
  for (const auto& w : watches)
    if (w.raw == registry.get()) return;
  auto last = std::make_shared<std::map<std::string, uint64_t>>();
  metrics::metrics_registry* r = registry.get();
  auto refresh = [r, last] {
    auto& c = remote_counters();
    auto add = [&](std::string_view family, const metrics::labels& l, const std::atomic<uint64_t>& v) {
      std::string id(family);
      for (const auto& [k, x] : l) id += "|" + k + "=" + x;
      const uint64_t now = v.load(), before = (*last)[id];
      r->counter(family, l).Increment(double(now - std::min(now, before)));
      (*last)[id] = now;
    };
    add("msomni_data_remote_requests_total", {}, c.requests);
    add("msomni_data_remote_bytes_total", {}, c.bytes);
    add("msomni_data_remote_retries_total", {{"cause", "server_error"}}, c.retry_server);
    add("msomni_data_remote_retries_total", {{"cause", "throttled"}}, c.retry_throttled);
    add("msomni_data_remote_retries_total", {{"cause", "reset"}}, c.retry_reset);
    add("msomni_data_remote_retries_total", {{"cause", "timeout"}}, c.retry_timeout);
    add("msomni_data_remote_retries_total", {{"cause", "short_body"}}, c.retry_short);
    add("msomni_data_remote_failures_total", {}, c.gave_up);
    add("msomni_data_remote_indexes_total", {{"origin", "built"}}, c.index_built);
    add("msomni_data_remote_indexes_total", {{"origin", "cache"}}, c.index_loaded);
    add("msomni_data_remote_cache_reads_total", {{"result", "hit"}}, c.cache_hits);
    add("msomni_data_remote_cache_reads_total", {{"result", "miss"}}, c.cache_misses);
    add("msomni_data_remote_cache_evictions_total", {}, c.cache_evictions);
    add("msomni_data_remote_cache_rejected_total", {}, c.cache_rejected);
    add("msomni_data_remote_cache_write_failures_total", {}, c.cache_write_failed);
    add("msomni_data_remote_prefetch_total", {{"result", "issued"}}, c.prefetch_issued);
    add("msomni_data_remote_prefetch_total", {{"result", "used"}}, c.prefetch_used);
    add("msomni_data_remote_prefetch_total", {{"result", "dropped"}}, c.prefetch_dropped);
    add("msomni_data_remote_prefetch_reads_total", {}, c.prefetch_samples);
    r->gauge("msomni_data_remote_cache_bytes").Set(double(c.cache_bytes.load()));
    r->gauge("msomni_data_remote_cache_capacity_bytes").Set(double(c.cache_capacity.load()));
    r->gauge("msomni_data_remote_prefetch_bytes").Set(double(c.prefetch_held.load()));
    r->gauge("msomni_data_remote_prefetch_capacity_bytes").Set(double(c.prefetch_capacity.load()));
  };
  watches.push_back({registry, r, std::make_unique<metrics::metrics_registry::refresher_handle>(registry->add_refresher(refresh))});
}

}  // namespace msomni::data
