// job_metrics_collector (see job_metrics_collector.hpp).
#include "metrics/job_metrics_collector.hpp"

#include "metrics/metrics_wire.hpp"

namespace msomni::metrics {

job_metrics_collector::job_metrics_collector(std::string job, std::shared_ptr<metrics_registry> own,
                                             size_t max_sources)
    : job_(std::move(job)), own_(std::move(own)), max_sources_(max_sources),
      accepted_(own_->counter("msomni_metrics_reports_total", {{"result", "accepted"}})),
      source_count_(own_->gauge("msomni_metrics_sources")) {}

bool job_metrics_collector::accept(const msg::metrics_report& r, std::string& why) {
  const auto refuse = [&](const std::string& reason) {
    why = reason;
    own_->counter("msomni_metrics_reports_total", {{"result", "refused"}}).Increment();
    return false;
  };
  if (r.source.empty()) return refuse("a report without its source");
  labels identity{{"job", job_}, {"node", r.node}};
  if (!r.rank.empty()) identity["rank"] = r.rank;
  auto families = from_report(r, identity, why);
  if (!families) return refuse(why);
  std::lock_guard lock(mutex_);
  auto it = pushed_.find(r.source);
  if (it == pushed_.end() && pushed_.size() >= max_sources_)
    return refuse("already holding the reports of " + std::to_string(max_sources_) + " processes");
  if (it != pushed_.end() && r.seq <= it->second.seq) return refuse("an older report than the one held");
  pushed_[r.source] = held{r.seq, std::move(*families)};
  source_count_.Set(static_cast<double>(pushed_.size()));
  accepted_.Increment();
  return true;
}

void job_metrics_collector::forget(const std::string& source) {
  std::lock_guard lock(mutex_);
  pushed_.erase(source);
  source_count_.Set(static_cast<double>(pushed_.size()));
}

std::vector<prometheus::MetricFamily> job_metrics_collector::collect() {
  auto all = own_->collect();
  set_labels(all, {{"job", job_}, {"node", "control"}});
  std::lock_guard lock(mutex_);
  for (const auto& [source, h] : pushed_) all.insert(all.end(), h.families.begin(), h.families.end());
  return merge_families(std::move(all));
}

std::vector<std::string> job_metrics_collector::sources() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [s, h] : pushed_) out.push_back(s);
  return out;
}

}  // namespace msomni::metrics
