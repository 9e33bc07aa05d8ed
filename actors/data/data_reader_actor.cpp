// The reader stage actor: this rank's samples read within the decode pool's credits (see
// data_stage_actors.hpp).
#include "data_stage_actors.hpp"

#include "messages/catalog.hpp"  // the inspect overloads of the data messages this actor receives
#include "metrics/accounted_actor.hpp"

namespace msomni::data::stage {
namespace {

struct reader_state {
  std::unique_ptr<own_reader> reader;
  std::unique_ptr<reader_core> core;
};

caf::behavior reader_actor(metrics::accounted_stateful_actor<reader_state>* self, std::shared_ptr<own_reader> reader,
                           size_t sources, caf::actor pool, caf::actor tensor,
                           std::shared_ptr<metrics::metrics_registry> registry, std::shared_ptr<live_data_metrics> live) {
  self->account_as("data_reader", std::move(registry));
  self->state.reader = std::make_unique<own_reader>(std::move(*reader));
  self->state.core = std::make_unique<reader_core>(sources);
  return {
      // pool -> reader: additive, so a repeat would over-grant; the pool sends each once.
      [=](const msg::credit_grant& g) {
        auto& st = self->state;
        st.core->on_credit(g);
        auto batch = std::make_shared<std::vector<raw_sample>>();
        std::string failure;
        try {
          while (auto s = st.core->next_read([&](uint32_t x) { return st.reader->ready(x); }))
            batch->push_back(st.reader->next(*s));
        } catch (const std::exception& e) {
          failure = e.what();
        }
        if (!batch->empty()) self->send(pool, std::move(batch));
        if (!failure.empty()) self->send(tensor, fail_atom::value, failure);
        if (live) live->reader.credits.store(st.core->credits_total(), relaxed);
      },
  };
}

}  // namespace

caf::actor spawn_reader(caf::actor_system& sys, std::shared_ptr<own_reader> reader, size_t sources, caf::actor pool,
                        caf::actor tensor, std::shared_ptr<metrics::metrics_registry> registry,
                        std::shared_ptr<live_data_metrics> live) {
  return sys.spawn(reader_actor, std::move(reader), sources, std::move(pool), std::move(tensor), std::move(registry),
                   std::move(live));
}

}  // namespace msomni::data::stage
