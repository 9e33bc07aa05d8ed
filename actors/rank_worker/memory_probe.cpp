// memory_probe (see memory_probe.hpp).
#include "memory_probe.hpp"

#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>

namespace msomni::rank_worker {

namespace {

using probe_tick_atom = caf::atom_constant<caf::atom("mprobe")>;
using probe_start_atom = caf::atom_constant<caf::atom("mprobego")>;

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

memory_probe::memory_probe(caf::actor_system& sys, msg::orchestrator_actor orchestrator, std::shared_ptr<kernels::memory_account> account,
                           std::shared_ptr<std::pmr::memory_resource> batch_memory, memory_probe_settings settings)
    : state_(std::make_shared<state>()) {
  state_->orchestrator = std::move(orchestrator);
  state_->account = std::move(account);
  state_->batch_memory = std::move(batch_memory);
  state_->settings = settings;
  // The timer runs only while a step does: step_started wakes it, a tick after the step ended
  // lets it sleep, so an idle rank (or one between steps) is never woken by it.
  timer_ = sys.spawn([st = state_](caf::event_based_actor* self) -> caf::behavior {
    auto ticking = std::make_shared<bool>(false);
    return {[st, self, ticking](probe_start_atom) {
              if (*ticking) return;
              *ticking = true;
              self->delayed_send(self, st->settings.interval, probe_tick_atom::value);
            },
            [st, self, ticking](probe_tick_atom) {
              auto s = st->in_step_sample();
              if (!s) {
                *ticking = false;
                return;
              }
              msg::orchestrator_actor to;
              {
                std::lock_guard<std::mutex> lock(st->mutex);
                to = st->orchestrator;
              }
              caf::anon_send(to, std::move(*s));
              self->delayed_send(self, st->settings.interval, probe_tick_atom::value);
            }};
  });
}

memory_probe::~memory_probe() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->in_step = false;
  }
  caf::anon_send_exit(timer_, caf::exit_reason::user_shutdown);
}

void memory_probe::step_started(const sample_identity& who, uint64_t step) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->who = who;
    state_->step = step;
    state_->in_step = true;
    state_->sent_in_step = 0;
  }
  caf::anon_send(timer_, probe_start_atom::value);
}

void memory_probe::send_to(msg::orchestrator_actor orchestrator) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->orchestrator = std::move(orchestrator);
}

void memory_probe::use_batch_memory(std::shared_ptr<std::pmr::memory_resource> batch_memory) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->batch_memory = std::move(batch_memory);
}

void memory_probe::step_aborted() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->in_step = false;
}

msg::memory_sample memory_probe::state::base_sample(bool in_step_now) const {
  msg::memory_sample s;
  s.name = who.name;
  s.epoch = who.epoch;
  s.rank = who.rank;
  s.world_size = who.world_size;
  s.step = step;
  s.at_ns = unix_ns();
  s.in_step = in_step_now;
  s.in_use_bytes = account->in_use();
  s.peak_bytes = account->peak();
  s.host_batch_bytes = kernels::batch_memory_in_use(batch_memory.get());
  s.budget_bytes = account->budget();
  if (s.peak_bytes < s.in_use_bytes) s.peak_bytes = s.in_use_bytes;  // read a moment apart
  return s;
}

msg::memory_sample memory_probe::step_ended(const msg::batch_features& batch, std::vector<msg::batch_features> upcoming) {
  msg::memory_sample s;
  msg::orchestrator_actor to;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->in_step = false;
    s = state_->base_sample(false);
    to = state_->orchestrator;
  }
  s.peak_bytes = std::max(state_->account->take_peak(), s.in_use_bytes);
  s.batch = batch;
  s.upcoming = std::move(upcoming);
  caf::anon_send(to, s);
  return s;
}

std::optional<msg::memory_sample> memory_probe::state::in_step_sample() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!in_step || sent_in_step >= settings.max_in_step) return std::nullopt;
  ++sent_in_step;
  return base_sample(true);
}

}  // namespace msomni::rank_worker
