// node_checker (see node_checker.hpp).
#include "node_checker.hpp"

#include "health_probes.hpp"
#include "health_report.hpp"

#include "collectives/ring_communicator.hpp"
#include "config/config_loader.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>

namespace msomni::health {

namespace {

using namespace std::chrono_literals;

struct checker_state {
  node_checker_settings s;
  std::unique_ptr<transport::transport_hub> hub;  // the pair probe's
  std::string hub_error;                          // why there is none
};

void ensure_probe_hub(checker_state& st) {
  if (st.hub || !st.hub_error.empty()) return;
  try {
    transport::ucx_node_options o;
    o.name = probe_name(st.s.node);
    o.listen_host = st.s.listen_host;
    o.secret = st.s.secret;
    st.hub = std::make_unique<transport::transport_hub>(o);
  } catch (const std::exception& e) {
    st.hub_error = e.what();
  }
}

msg::node_check_report check_node(checker_state& st, const msg::node_check_request& r) {
  const auto level = parse_level(r.level).value_or(health_level::quick);
  health_report report;
  try {
    const auto cfg = config::load_string(r.config_text, r.config_name, r.overrides);
    health_options o;
    o.level = level;
    o.checkpoint_dir = r.checkpoint_dir;
    o.node = st.s.node;
    o.peer_binary = st.s.peer_binary;
    report = run_health_checks(cfg, o);
  } catch (const config::config_errors& e) {
    std::vector<std::string> problems;
    for (const auto& p : e.errors()) problems.push_back(p.to_string());
    report = config_failed_report(r.config_name, problems, level);
  } catch (const std::exception& e) {
    report = config_failed_report(r.config_name, {e.what()}, level);
  }
  report.node = st.s.node;
  ensure_probe_hub(st);
  return {st.s.node, to_json(report).dump(), st.hub ? st.hub->node().address() : ""};
}

msg::node_pair_result probe_pair(checker_state& st, const msg::node_pair_probe& p) {
  msg::node_pair_result out{p.pair, st.s.node, p.peer, 0.0, ""};
  ensure_probe_hub(st);
  if (!st.hub) {
    out.error = "this node's pair probe could not start: " + st.hub_error;
    return out;
  }
  const auto other = probe_name(p.peer);
  auto& node = st.hub->node();
  if (p.dial && !node.is_up(other)) node.connect(p.peer_address);
  if (!node.wait_up(other, 10s)) {
    out.error = "no connection with " + p.peer + "'s pair probe" + (p.dial ? " at " + p.peer_address : "") + " within 10 s";
    return out;
  }
  std::vector<std::string> members{probe_name(st.s.node), other};
  std::sort(members.begin(), members.end());
  const int me = members.front() == probe_name(st.s.node) ? 0 : 1;
  try {
    transport::ring_communicator comm(*st.hub, members, p.pair + 1, {.timeout = 20s, .same_host = false});
    std::vector<double> rounds;
    std::vector<float> data(static_cast<size_t>(std::max<int64_t>(p.elements, 1)));
    for (int64_t round = 0; round < std::max<int64_t>(p.rounds, 1); ++round) {
      // Small integers: the sum is exact in float32 whatever the order.
      for (size_t i = 0; i < data.size(); ++i) data[i] = float((i % 7) + size_t(me));
      const auto t0 = std::chrono::steady_clock::now();
      comm.all_reduce(data, transport::reduce_op::sum);
      rounds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      for (size_t i = 0; i < data.size(); ++i)
        if (data[i] != float(2 * (i % 7) + 1)) {
          out.error = "round " + std::to_string(round) + ": element " + std::to_string(i) + " is " +
                      std::to_string(data[i]) + ", not " + std::to_string(2 * (i % 7) + 1);
          return out;
        }
    }
    std::sort(rounds.begin(), rounds.end());
    out.median_ms = rounds[rounds.size() / 2];
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

using job_done_atom = caf::atom_constant<caf::atom("ncdone")>;

// The work runs on a thread of the actor's own, one job at a time (a detached actor would keep
// CAF 0.17's actor system from shutting down); the result comes back as a message, which
// the actor delivers to the requester.
struct checker_shell {
  std::shared_ptr<checker_state> st;
  std::thread worker;
  std::deque<std::pair<uint64_t, std::function<caf::message()>>> queue;  // (job id, job)
  std::map<uint64_t, caf::response_promise> promises;                     // queued and running
  uint64_t next_id = 0;
  bool busy = false;
  ~checker_shell() {
    if (worker.joinable()) worker.join();
  }
};

void start_next(caf::event_based_actor* self, checker_shell& sh) {
  if (sh.busy || sh.queue.empty()) return;
  if (sh.worker.joinable()) sh.worker.join();
  const uint64_t id = sh.queue.front().first;
  auto job = std::move(sh.queue.front().second);
  sh.queue.pop_front();
  sh.busy = true;
  sh.worker = std::thread([job = std::move(job), id, me = self->address()] {
    auto result = job();
    if (auto h = caf::actor_cast<caf::actor>(me)) caf::anon_send(h, job_done_atom::value, id, std::move(result));
  });
}

template <class Fn>
caf::response_promise enqueue(caf::event_based_actor* self, checker_shell& sh, Fn fn) {
  auto rp = self->make_response_promise();
  const uint64_t id = sh.next_id++;
  sh.promises.emplace(id, rp);
  sh.queue.emplace_back(id, [fn = std::move(fn)] { return caf::make_message(fn()); });
  start_next(self, sh);
  return rp;
}

caf::behavior node_checker(caf::stateful_actor<checker_shell>* self, std::shared_ptr<checker_state> st) {
  self->state.st = st;
  return {
      [self](msg::node_check_request& r) {
        auto st = self->state.st;
        return enqueue(self, self->state, [st, r = std::move(r)] { return check_node(*st, r); });
      },
      [self](msg::node_pair_probe& p) {
        auto st = self->state.st;
        return enqueue(self, self->state, [st, p = std::move(p)] { return probe_pair(*st, p); });
      },
      [self](job_done_atom, uint64_t id, caf::message& result) {
        auto& sh = self->state;
        sh.busy = false;
        if (auto it = sh.promises.find(id); it != sh.promises.end()) {
          it->second.deliver(std::move(result));
          sh.promises.erase(it);
        }
        start_next(self, sh);
      },
  };
}

}  // namespace

std::string probe_name(const std::string& node) { return "probe-" + node; }

caf::actor spawn_node_checker(caf::actor_system& sys, node_checker_settings s) {
  auto st = std::make_shared<checker_state>();
  st->s = std::move(s);
  return sys.spawn(node_checker, st);
}

}  // namespace msomni::health
