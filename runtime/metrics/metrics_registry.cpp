// metrics_registry (see metrics_registry.hpp).
#include "metrics/metrics_registry.hpp"

#include <prometheus/family.h>

#include <algorithm>
#include <stdexcept>

namespace msomni::metrics {

metrics_registry::metrics_registry() : registry_(std::make_shared<prometheus::Registry>()) {}

const family_spec& metrics_registry::checked(std::string_view family, metric_kind kind, const labels& l) const {
  const auto* spec = find_family(family);
  if (!spec) throw std::logic_error("metric family " + std::string(family) + " is not in the metric catalog");
  if (spec->kind != kind)
    throw std::logic_error("metric family " + std::string(family) + " is a " + to_string(spec->kind) + ", not a " +
                           to_string(kind));
  for (const auto& [name, value] : l)
    if (std::find(spec->labels.begin(), spec->labels.end(), name) == spec->labels.end() && !is_identity_label(name))
      throw std::logic_error("metric family " + std::string(family) + " has no label " + name);
  return *spec;
}

namespace {

// The family `spec` names in `families`, registered in `registry` the first time.
template <class Metric, class Builder>
prometheus::Family<Metric>& family_in(std::map<std::string, prometheus::Family<Metric>*, std::less<>>& families,
                                      const family_spec& spec, Builder builder, prometheus::Registry& registry) {
  auto it = families.find(spec.name);
  if (it == families.end())
    it = families
             .emplace(std::string(spec.name),
                      &builder.Name(std::string(spec.name)).Help(std::string(spec.help)).Register(registry))
             .first;
  return *it->second;
}

}  // namespace

prometheus::Counter& metrics_registry::counter(std::string_view family, const labels& l) {
  const auto& spec = checked(family, metric_kind::counter, l);
  std::lock_guard lock(mutex_);
  return family_in(counters_, spec, prometheus::BuildCounter(), *registry_).Add(l);
}

prometheus::Gauge& metrics_registry::gauge(std::string_view family, const labels& l) {
  const auto& spec = checked(family, metric_kind::gauge, l);
  std::lock_guard lock(mutex_);
  return family_in(gauges_, spec, prometheus::BuildGauge(), *registry_).Add(l);
}

void metrics_registry::remove_gauge(std::string_view family, const labels& l) {
  checked(family, metric_kind::gauge, l);
  std::lock_guard lock(mutex_);
  const auto it = gauges_.find(family);
  if (it == gauges_.end() || !it->second->Has(l)) return;
  it->second->Remove(&it->second->Add(l));
}

prometheus::Histogram& metrics_registry::histogram(std::string_view family, const labels& l) {
  const auto& spec = checked(family, metric_kind::histogram, l);
  std::lock_guard lock(mutex_);
  return family_in(histograms_, spec, prometheus::BuildHistogram(), *registry_)
      .Add(l, prometheus::Histogram::BucketBoundaries(spec.buckets.begin(), spec.buckets.end()));
}

std::vector<prometheus::MetricFamily> metrics_registry::collect() {
  {
    // Held while they run, so that a refresher is never removed (and what it reads destroyed)
    // in the middle of one.
    std::lock_guard lock(refresh_mutex_);
    for (const auto& [id, r] : refreshers_) r();
  }
  return registry_->Collect();
}

metrics_registry::refresher_handle metrics_registry::add_refresher(std::function<void()> refresh) {
  std::lock_guard lock(refresh_mutex_);
  const auto id = next_refresher_++;
  refreshers_.emplace(id, std::move(refresh));
  return refresher_handle(this, id);
}

metrics_registry::refresher_handle& metrics_registry::refresher_handle::operator=(refresher_handle&& o) noexcept {
  if (this != &o) {
    this->~refresher_handle();
    owner_ = o.owner_;
    id_ = o.id_;
    o.owner_ = nullptr;
  }
  return *this;
}

metrics_registry::refresher_handle::~refresher_handle() {
  if (!owner_) return;
  std::lock_guard lock(owner_->refresh_mutex_);
  owner_->refreshers_.erase(id_);
  owner_ = nullptr;
}

}  // namespace msomni::metrics
