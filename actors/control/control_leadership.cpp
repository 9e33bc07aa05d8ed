// control_leadership (see control_leadership.hpp).
#include "control_leadership.hpp"

#include "core/clock.hpp"
#include "core/control_file.hpp"
#include "core/log.hpp"
#include "core/rng.hpp"

#include <unistd.h>

#include <optional>
#include <set>

namespace msomni::control {

namespace {

using namespace std::chrono_literals;
using json = nlohmann::ordered_json;

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

const store::key_value* find_key(const std::vector<store::key_value>& kvs, const std::string& key) {
  for (const auto& kv : kvs)
    if (kv.key == key) return &kv;
  return nullptr;
}

std::chrono::milliseconds request_timeout(nanos ttl) {
  // A request may take a third of the renewal interval: a renewal that hangs cannot eat the lease.
  return std::max(200ms, std::chrono::duration_cast<std::chrono::milliseconds>(ttl / 9));
}

}  // namespace

std::string config_fingerprint(const std::map<std::string, std::string>& resolved_values) {
  // FNV-1a over "key=value\n" of every key that must be the same on every control process,
  // from a start one digit short of FNV's offset basis. Kept so: the fingerprint is stored in
  // the control store, and a control process of a new build must match one already there.
  constexpr uint64_t fingerprint_start = 1469598103934665603ull;
  uint64_t h = fingerprint_start;
  auto mix = [&h](const std::string& s) { h = fnv1a_64(s, h); };
  for (const auto& [key, value] : resolved_values) {
    if (key.rfind("control.", 0) == 0 || key == "cluster.control_host" || key == "cluster.control_port" ||
        key == "cluster.metrics_port")
      continue;
    mix(key), mix("="), mix(value), mix("\n");
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

control_leadership::control_leadership(leadership_options o)
    : o_(std::move(o)), keys_(o_.job), core_(lease_settings{o_.ttl}) {
  me_.host = host_name();
  me_.pid = ::getpid();
  me_.id = me_.host + ":" + std::to_string(me_.pid);
  me_.run_dir = o_.run_dir;
  me_.ttl_s = std::chrono::duration_cast<std::chrono::seconds>(o_.ttl).count();
  client_ = std::make_unique<store::etcd_client>(o_.endpoints, request_timeout(o_.ttl));
}

control_leadership::~control_leadership() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (lease_ == 0) return;
  try {
    client_->revoke(lease_);  // a standby need not wait out the TTL
  } catch (const std::exception& e) {
    MSOMNI_LOG(warn, "control") << "the lease was not revoked (it runs out by itself): " << e.what();
  }
}

nanos campaign_patience(nanos ttl) {
  return std::chrono::seconds(leaderless_limit_s(std::chrono::duration_cast<std::chrono::seconds>(ttl).count()));
}

nanos campaign_backoff(nanos renew_interval, nanos ttl, int silent) {
  nanos wait = renew_interval;
  for (int i = 0; i < silent && wait < ttl; ++i) wait *= 2;
  return std::min(wait, std::max(ttl, renew_interval));
}

election control_leadership::campaign(const std::atomic<bool>& stop,
                                      const std::function<void(const std::string&)>& say) {
  election e;
  const auto ttl_s = me_.ttl_s;
  std::set<int64_t> terms_seen;
  std::string leader_seen;
  time_point last_seen_at{};
  int failures = 0;
  std::optional<time_point> silent_since;  // the first of the attempts in a row the store did not answer
  std::string last_failure;
  for (;;) {
    if (stop) return e;
    const auto sent = clock_.now();
    try {
      if (lease_ == 0 || client_->keep_alive(lease_) == 0) lease_ = client_->grant_lease(ttl_s);
      me_.since_ms = unix_ms();
      const auto record = me_.to_json().dump();
      const auto r = client_->txn(
          {store::compare::created_at(keys_.leader(), 0)},
          {store::operation::put(keys_.leader(), record, lease_), store::operation::range(keys_.state()),
           store::operation::remove(keys_.standby(me_.id))},
          {store::operation::range(keys_.leader()), store::operation::range(keys_.state()),
           store::operation::put(keys_.standby(me_.id), record, lease_)});
      failures = 0;
      silent_since.reset();
      const auto* state = find_key(r.ranged, keys_.state());
      if (state) e.previous = job_state::from_json(state->value);
      if (r.succeeded) {
        core_.on_elected(sent, r.revision, ttl_s);
        e.elected = true;
        e.term = r.revision;
        e.waited = leader_seen.empty() ? nanos{0} : clock_.now() - last_seen_at;
        election_view v;
        v.state_known = state != nullptr;
        v.phase = e.previous.phase;
        v.fingerprint = e.previous.fingerprint;
        v.saw_that_leader = terms_seen.count(e.previous.term) > 0;
        e.what = after_election(v, o_.fingerprint);
        state_ = e.previous;
        if (!state) state_ = job_state{};
        return e;
      }
      if (const auto* leader = find_key(r.ranged, keys_.leader())) {
        terms_seen.insert(leader->create_revision);
        last_seen_at = clock_.now();
        const auto rec = leader_record::from_json(leader->value);
        if (o_.yield_to_another_leader && rec.id != me_.id) {  // its own old key expires by itself
          e.previous_leader = rec;
          e.term = leader->create_revision;
          e.yielded = true;
          return e;
        }
        if (rec.id != leader_seen) {
          leader_seen = rec.id;
          e.previous_leader = rec;
          say("standby: " + rec.id + " leads the job (term " + std::to_string(leader->create_revision) +
              (rec.address.empty() ? "" : ", control at " + rec.address) + "); waiting to take over");
        }
      }
    } catch (const store::etcd_error& err) {
      ++failures;
      if (!silent_since) silent_since = sent;
      const auto patience = campaign_patience(o_.ttl);
      if (clock_.now() - *silent_since >= patience) {
        e.problem = std::string("the control store did not answer for ") +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(patience).count()) + " s (" +
                    std::to_string(failures) + " attempts, as long as the ranks train on without a leader): " +
                    err.what();
        return e;
      }
      if (last_failure != err.what()) say(std::string("standby: the control store does not answer (retrying): ") + err.what());
      last_failure = err.what();
    }
    const auto next = sent + (silent_since ? campaign_backoff(core_.settings().renew_interval(), o_.ttl, failures - 1)
                                           : core_.settings().renew_interval());
    while (!stop && clock_.now() < next) std::this_thread::sleep_for(std::min<nanos>(50ms, next - clock_.now()));
  }
}

store::txn_result control_leadership::fenced(const std::vector<store::operation>& ops) {
  return client_->txn({store::compare::created_at(keys_.leader(), core_.term())}, ops);
}

void control_leadership::serve(std::function<void(const std::string& why)> on_deposed) {
  on_deposed_ = std::move(on_deposed);
  state_.phase = "running";
  state_.term = core_.term();
  state_.leader = me_.id;
  state_.fingerprint = o_.fingerprint;
  state_.updated_ms = unix_ms();
  try {  // the term claims the job at once; a refusal here deposes before anything starts
    if (!fenced({store::operation::put(keys_.state(), state_.to_json().dump())}).succeeded)
      core_.on_fenced("another leader was elected before this one's first commit");
  } catch (const store::etcd_error& e) {
    core_.on_renew_failed(e.what());
  }
  thread_ = std::thread([this] { run(); });
}

void control_leadership::announce(const std::string& control_address, const std::string& metrics_address) {
  std::lock_guard lock(mutex_);
  me_.address = control_address;
  me_.metrics_address = metrics_address;
  announce_pending_ = true;
  wake_.notify_all();
}

void control_leadership::record_event(const json& line) {
  entry e;
  auto stored = line;
  stored["term"] = core_.term();  // set once before serve(); the fence proves it
  e.line = stored.dump();
  if (const auto it = line.find("epoch"); it != line.end() && it->is_number_unsigned()) e.epoch = *it, e.has_epoch = true;
  if (const auto it = line.find("step"); it != line.end() && it->is_number_unsigned()) e.step = *it, e.has_step = true;
  if (const auto it = line.find("attempt"); it != line.end() && it->is_number_unsigned()) e.attempt = *it;
  if (const auto it = line.find("recoveries"); it != line.end() && it->is_number_integer() && it->get<int64_t>() >= 0)
    e.recoveries = it->get<uint64_t>();
  if (const auto it = line.find("replicas"); it != line.end() && it->is_number_integer() && it->get<int64_t>() > 0)
    e.replicas = it->get<int64_t>();
  std::lock_guard lock(mutex_);
  if (queue_.size() >= queue_max) {
    if (metrics_) metrics_->counter("msomni_control_store_events_dropped_total").Increment();
    return;
  }
  queue_.push_back(std::move(e));
  wake_.notify_all();
}

bool control_leadership::finish(const std::string& phase) {
  std::unique_lock lock(mutex_);
  final_phase_ = phase;
  wake_.notify_all();
  const auto drained = [this] {
    // A deposed leader's callers learn it from on_deposed first: wait for that report.
    const auto role = core_.role();
    return (queue_.empty() && final_phase_.empty()) || deposition_reported_ ||
           (role != leader_role::leading && role != leader_role::deposed);
  };
  return wake_.wait_for(lock, o_.ttl, drained) && final_phase_.empty() && queue_.empty();
}

bool control_leadership::leading() const {
  std::lock_guard lock(mutex_);
  return core_.role() == leader_role::leading;
}

bool control_leadership::deposed_by_fence() const {
  std::lock_guard lock(mutex_);
  return core_.fenced();
}
int64_t control_leadership::term() const {
  std::lock_guard lock(mutex_);
  return core_.term();
}

void control_leadership::renew(std::unique_lock<std::mutex>& lock) {
  const auto sent = clock_.now();
  lock.unlock();
  std::string failure;
  int64_t ttl_left = -1;
  try {
    ttl_left = client_->keep_alive(lease_);
  } catch (const store::etcd_error& e) {
    failure = e.what();
  }
  lock.lock();
  if (failure.empty()) core_.on_renewed(sent, ttl_left);
  else core_.on_renew_failed(failure);
}

// One fenced transaction with what waits: the leader record, up to a batch of events and the
// job's state. False when nothing was committed (store unreachable or fenced).
bool control_leadership::commit_some(std::unique_lock<std::mutex>& lock) {
  constexpr size_t batch_max = 64;
  if (queue_.empty() && !announce_pending_ && final_phase_.empty()) return false;
  std::vector<store::operation> ops;
  auto next = state_;
  if (announce_pending_) ops.push_back(store::operation::put(keys_.leader(), me_.to_json().dump(), lease_));
  const size_t n = std::min(batch_max, queue_.size());
  for (size_t i = 0; i < n; ++i) {
    const auto& e = queue_[i];
    const uint64_t seq = next.next_event++;
    ops.push_back(store::operation::put(keys_.event(seq), e.line));
    if (seq > event_log_max) ops.push_back(store::operation::remove(keys_.event(seq - event_log_max)));
    // Epochs only grow in a job, across leaders too; a line before the first plan says 0.
    if (e.has_epoch) next.epoch = std::max(next.epoch, e.epoch);
    if (e.replicas > 0) next.replicas = e.replicas;
    if (e.has_step) next.step = std::max(next.step, e.step);
    if (e.attempt) next.attempt = e.attempt;
    next.recoveries = std::max(next.recoveries, e.recoveries);
  }
  const bool ending = n == queue_.size() && !final_phase_.empty();
  if (ending) next.phase = final_phase_;
  next.updated_ms = unix_ms();
  ops.push_back(store::operation::put(keys_.state(), next.to_json().dump()));
  lock.unlock();
  std::string failure;
  bool fenced_out = false;
  try {
    fenced_out = !fenced(ops).succeeded;
  } catch (const store::etcd_error& e) {
    failure = e.what();
  }
  lock.lock();
  if (fenced_out) {
    core_.on_fenced("the leader key is no longer this term's (" + std::to_string(core_.term()) + ")");
    if (metrics_) metrics_->counter("msomni_control_store_commits_total", {{"result", "fenced"}}).Increment();
    return false;
  }
  if (!failure.empty()) {
    core_.on_renew_failed(failure);
    if (metrics_) metrics_->counter("msomni_control_store_commits_total", {{"result", "unreachable"}}).Increment();
    return false;
  }
  if (metrics_) metrics_->counter("msomni_control_store_commits_total", {{"result", "committed"}}).Increment();
  state_ = next;
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  if (ending) final_phase_.clear();
  announce_pending_ = false;
  wake_.notify_all();
  return true;
}

void control_leadership::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto now = clock_.now();
    if (core_.renewal_due(now)) renew(lock);
    const bool deposed_now = core_.check(clock_.now());
    if (deposed_now) {
      MSOMNI_LOG(warn, "control") << "this control process steps down (term " << core_.term() << "): " << core_.why_deposed();
      auto notify = on_deposed_;
      const auto why = core_.why_deposed();
      lock.unlock();
      if (notify) notify(why);
      lock.lock();
      // Only now does finish() return: its caller sees the deposition already reported.
      deposition_reported_ = true;
      wake_.notify_all();
    }
    if (core_.may_commit(clock_.now())) {
      while (!stop_ && core_.may_commit(clock_.now()) && !core_.renewal_due(clock_.now()) && commit_some(lock)) {
      }
    }
    refresh_metrics(clock_.now());
    wake_.wait_for(lock, 50ms);
  }
}

void control_leadership::attach_metrics(metrics::metrics_registry& registry) {
  std::lock_guard lock(mutex_);
  metrics_ = &registry;
  for (const char* result : {"committed", "fenced", "unreachable"})
    registry.counter("msomni_control_store_commits_total", {{"result", result}});
  registry.counter("msomni_control_store_events_dropped_total");
  registry.counter("msomni_control_store_failovers_total");
  refresh_metrics(clock_.now());
}

void control_leadership::refresh_metrics(time_point now) {
  if (!metrics_) return;
  metrics_->gauge("msomni_control_leader").Set(core_.role() == leader_role::leading ? 1 : 0);
  metrics_->gauge("msomni_control_lease_left_seconds").Set(std::chrono::duration<double>(core_.lease_left(now)).count());
  metrics_->gauge("msomni_control_store_queue_depth").Set(static_cast<double>(queue_.size()));
  const auto failovers = client_->failovers();
  if (failovers > failovers_counted_)
    metrics_->counter("msomni_control_store_failovers_total").Increment(static_cast<double>(failovers - failovers_counted_));
  failovers_counted_ = failovers;
}

}  // namespace msomni::control

namespace msomni::control {
void embedded_control_series(metrics::metrics_registry& registry) {
  registry.gauge("msomni_control_leader").Set(1);
  registry.gauge("msomni_control_lease_left_seconds").Set(0);
  registry.gauge("msomni_control_store_queue_depth").Set(0);
  for (const char* result : {"committed", "fenced", "unreachable"})
    registry.counter("msomni_control_store_commits_total", {{"result", result}});
  registry.counter("msomni_control_store_events_dropped_total");
  registry.counter("msomni_control_store_failovers_total");
}
}  // namespace msomni::control

namespace msomni::control {

control_view read_control_view(const std::vector<std::string>& endpoints, const std::string& job) {
  control_view v;
  const job_keys keys(job);
  store::etcd_client client(endpoints, std::chrono::milliseconds(2000));
  v.members = client.status_of_members();
  try {
    if (const auto leader = client.get(keys.leader())) {
      v.has_leader = true;
      v.term = leader->create_revision;
      v.leader = leader_record::from_json(leader->value);
      v.lease_left_s = leader->lease ? client.time_to_live(leader->lease) : 0;
    }
    for (const auto& kv : client.get_prefix(keys.standbys())) v.standbys.push_back(leader_record::from_json(kv.value));
    if (const auto state = client.get(keys.state())) v.state = job_state::from_json(state->value);
  } catch (const store::etcd_error& e) {
    v.error = e.what();
  }
  return v;
}

nlohmann::ordered_json control_view::to_json() const {
  nlohmann::ordered_json j;
  j["leader"] = has_leader ? leader.to_json() : nlohmann::ordered_json();
  j["term"] = term;
  j["lease_left_s"] = lease_left_s;
  j["standbys"] = nlohmann::ordered_json::array();
  for (const auto& s : standbys) j["standbys"].push_back(s.to_json());
  j["state"] = state.to_json();
  j["store"] = nlohmann::ordered_json::array();
  for (const auto& m : members)
    j["store"].push_back({{"endpoint", m.endpoint}, {"up", m.up}, {"version", m.version}, {"error", m.error},
                          {"raft_term", m.raft_term}, {"db_size", m.db_size}});
  if (!error.empty()) j["error"] = error;
  return j;
}

std::string control_view::to_text() const {
  std::string t = "control plane:\n";
  if (!error.empty()) t += "  the store did not answer: " + error + "\n";
  if (has_leader)
    t += "  leader   " + leader.id + " (term " + std::to_string(term) + ", control at " +
         (leader.address.empty() ? std::string("- not serving yet") : leader.address) + "), lease " +
         std::to_string(lease_left_s) + " s left of " + std::to_string(leader.ttl_s) + " s\n";
  else if (error.empty())
    t += "  leader   none now" + (state.leader.empty() ? std::string() : " (the last was " + state.leader + ", job " + state.phase + ")") + "\n";
  for (const auto& s : standbys) t += "  standby  " + s.id + " (run directory " + s.run_dir + ")\n";
  if (standbys.empty()) t += "  standby  none\n";
  size_t up = 0;
  for (const auto& m : members) up += m.up;
  t += "  store    " + std::to_string(up) + " of " + std::to_string(members.size()) + " etcd members answer";
  for (const auto& m : members) t += m.up ? "" : "; " + m.error;
  return t + "\n";
}

}  // namespace msomni::control
