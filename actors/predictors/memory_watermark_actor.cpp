// The memory watermark actor (see memory_watermark_actor.hpp): samples in, advice out.
#include "memory_watermark_actor.hpp"

#include "core/log.hpp"
#include "messages/catalog.hpp"
#include "metrics/accounted_actor.hpp"

#include <cblas.h>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

namespace msomni::predict {

namespace {

batch_features features_of(const msg::batch_features& b) {
  batch_features f;
  f.image_samples = b.image_samples;
  f.video_samples = b.video_samples;
  f.text_samples = b.text_samples;
  f.image_patches = static_cast<int64_t>(b.image_patches);
  f.video_patches = static_cast<int64_t>(b.video_patches);
  f.text_tokens = static_cast<int64_t>(b.text_tokens);
  f.seq_len = b.seq_len;
  f.micro_batch = b.micro_batch;
  return f;
}

memory_sample sample_of(const msg::memory_sample& m, int64_t first_ns) {
  memory_sample s;
  s.step = static_cast<int64_t>(m.step);
  s.t_ms = static_cast<double>(m.at_ns - first_ns) / 1e6;
  s.in_use_bytes = static_cast<int64_t>(m.in_use_bytes);
  s.peak_bytes = static_cast<int64_t>(m.peak_bytes);
  s.batch = features_of(m.batch);
  for (const auto& u : m.upcoming) s.upcoming.push_back(features_of(u));
  s.world_size = m.world_size;
  return s;
}

msg::batch_features features_msg(const batch_features& b) {
  msg::batch_features m;
  m.image_samples = static_cast<uint32_t>(b.image_samples);
  m.video_samples = static_cast<uint32_t>(b.video_samples);
  m.text_samples = static_cast<uint32_t>(b.text_samples);
  m.image_patches = static_cast<uint64_t>(b.image_patches);
  m.video_patches = static_cast<uint64_t>(b.video_patches);
  m.text_tokens = static_cast<uint64_t>(b.text_tokens);
  m.seq_len = static_cast<uint32_t>(b.seq_len);
  m.micro_batch = static_cast<uint32_t>(b.micro_batch);
  return m;
}

msg::memory_fit fit_message(const fit_request& f) {
  msg::memory_fit m;
  m.rank_name = f.rank_name;
  m.rank = f.rank;
  m.world_size = static_cast<uint32_t>(f.world_size);
  m.step = static_cast<uint64_t>(f.step);
  m.forecast_bytes = f.forecast_bytes;
  m.budget_bytes = f.budget_bytes;
  m.batch = features_msg(f.batch);
  return m;
}

struct watermark_state {
  watermark_state(watermark_settings s, std::shared_ptr<metrics::metrics_registry> r)
      : core(std::move(s)), registry(std::move(r)) {}
  watermark_core core;
  std::shared_ptr<metrics::metrics_registry> registry;
  int64_t first_ns = 0;
};

void count(watermark_state& st, const std::string& action) {
  if (st.registry) st.registry->counter("msomni_memory_advice_total", {{"action", action}}).Increment();
}

void forget(watermark_state& st, const std::string& rank_name) {
  st.core.forget(rank_name);
  if (st.registry) st.registry->remove_gauge("msomni_memory_forecast_bytes", {{"target", rank_name}});
}

msg::memory_predictor_actor::behavior_type memory_watermark(metrics::accounted<msg::memory_predictor_actor::base>* self, std::shared_ptr<watermark_state> st) {
  self->account_as("memory_predictor", st->registry);
  if (st->registry) st->registry->counter("msomni_memory_fits_total", {{"result", "requested"}});  // 0 until asked
  return {
      [self, st](const msg::memory_sample& m) {
        if (m.in_step) return;  // the forecast is of step peaks
        if (st->first_ns == 0) st->first_ns = m.at_ns;
        std::optional<watermark_advice> a;
        try {
          a = st->core.on_sample(m.name, m.rank, sample_of(m, st->first_ns));
        } catch (const std::exception& e) {  // a sample the core refuses is logged, never fatal
          MSOMNI_LOG(warn, "memory_predictor") << "sample of " << m.name << " step " << m.step << " not used: " << e.what();
          return;
        }
        if (st->registry)
          st->registry->gauge("msomni_memory_forecast_bytes", {{"target", m.name}})
              .Set(st->core.forecasts().at(m.name).max_bytes);
        // To whoever forwarded the sample (the orchestrator), which passes them on to the rank.
        const auto to = caf::actor_cast<msg::orchestrator_actor>(self->current_sender());
        for (auto& f : st->core.take_fits()) {
          if (st->registry) st->registry->counter("msomni_memory_fits_total", {{"result", "requested"}}).Increment();
          if (to) self->send(to, fit_message(f));
        }
        if (!a) return;
        count(*st, to_string(a->advice.action));
        if (!a->advice.fits) count(*st, "overflow");
        msg::memory_advice out;
        out.kind = a->advice.action == memory_action::evict ? msg::advice_kind::evict : msg::advice_kind::reserve;
        out.gb = (a->advice.action == memory_action::evict ? a->advice.evict_bytes : a->advice.reserve_bytes) / 1e9;
        out.rank = m.rank;
        out.reason = a->reason;
        out.rank_name = a->rank_name;
        out.step = a->step;
        out.forecast_gb = a->forecast.max_bytes / 1e9;
        out.fits = a->advice.fits;
        if (to) self->send(to, std::move(out));
      },
      // A rank that left or died: its window and forecast go with it.
      // A rank that is gone: its forecast (and its series) go with it.
      [st](const msg::rank_left& l) { forget(*st, l.name); },
      [st](const msg::rank_exited& e) { forget(*st, e.name); },
  };
}

}  // namespace

msg::memory_predictor_actor spawn_memory_watermark(caf::actor_system& sys, watermark_settings settings,
                                  std::shared_ptr<metrics::metrics_registry> registry) {
  // One BLAS thread in the control process. The predictor's matrices are 91 x 91, too small to
  // gain from threads, and the process forks rank processes: OpenBLAS's fork handler shuts its
  // thread pool down, so a threaded call running in the predictor at that moment waits forever
  // on workers that are gone (seen: dsyev spinning after a replacement rank was started).
  openblas_set_num_threads(1);
  return sys.spawn(memory_watermark, std::make_shared<watermark_state>(std::move(settings), std::move(registry)));
}

}  // namespace msomni::predict
