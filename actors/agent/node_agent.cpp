// node_agent (see node_agent.hpp).
#include "node_agent.hpp"

#include "logged_process.hpp"
#include "node_slots.hpp"
#include "core/log.hpp"
#include "core/secret_file.hpp"
#include "core/sibling_binary.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include "metrics/accounted_actor.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <deque>
#include <map>
#include <memory>

namespace msomni::agent {

namespace {

using poll_atom = caf::atom_constant<caf::atom("apoll")>;
using beat_atom = caf::atom_constant<caf::atom("abeat")>;
// What the agent takes: its interface plus its own timers.
using agent_impl = node_agent_actor::extend<caf::reacts_to<poll_atom>, caf::reacts_to<beat_atom>>;
constexpr auto poll_interval = std::chrono::milliseconds(100);
constexpr size_t held_exits_max = 64;

struct agent_state {
  agent_settings s;
  msg::orchestrator_actor orchestrator;
  std::map<std::string, std::unique_ptr<logged_process>> ranks;
  std::map<std::string, int64_t> slot_of;  // live rank -> its local index on this node
  uint64_t seq = 0;
  // Following the job's leader: ranks that ended while no leader led it, told to the next one
  // after its agent_hello (it ignores those it never knew); the newest held_exits_max.
  std::deque<msg::rank_exited> held_exits;
  uint64_t exits_let_go = 0;
  prometheus::Counter* ends_held = nullptr;     // msomni_agent_rank_ends_leaderless_total (metrics on)
  prometheus::Counter* ends_let_go = nullptr;
  ~agent_state() {
    if (s.let_ranks_run && s.let_ranks_run->load())
      for (auto& [name, rank] : ranks) rank->release();
  }
};

// ", attempt N" when the log directory is a run directory's logs/ (the agent inside msomni-run):
// the run's attempt, for the rank log's header. An msomni-agent elsewhere does not know it.
std::string attempt_note(const std::string& log_dir) {
  std::ifstream in(std::filesystem::path(log_dir).parent_path() / "attempt");
  uint64_t attempt = 0;
  return in >> attempt ? ", attempt " + std::to_string(attempt) : std::string();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

using agent_self = metrics::accounted<agent_impl::base>*;

void say_hello(agent_self self, agent_state& st) {
  self->send(st.orchestrator, msg::agent_hello{st.s.node, st.s.rack, st.s.switch_name, st.s.slots,
                                               static_cast<int64_t>(::getpid())});
}

// Following the job's leader: the one it had is gone; the ranks train on.
void lose_leader(agent_state& st) {
  if (!st.orchestrator) return;
  st.orchestrator = msg::orchestrator_actor{};
  MSOMNI_LOG(warn, "agent") << "node " << st.s.node << ": the job's leader is gone; its ranks here ("
                            << st.ranks.size() << ") train on until the next leader adopts them";
  if (st.s.on_orchestrator_lost) st.s.on_orchestrator_lost();
}

// Starts rank `r.name` in a free slot of this node.
void start_rank(agent_self self, agent_state* st, const msg::spawn_rank& r) {
  auto args = r.args;
  args.insert(args.end(), {"--node", st->s.node});
  // A repeated spawn of a live rank keeps its slot (the old process is replaced).
  auto held = st->slot_of;
  held.erase(r.name);
  const int64_t slot = lowest_free_slot(held);
  try {
    st->ranks[r.name] = std::make_unique<logged_process>(
        st->s.rank_binary, args, st->s.log_dir + "/" + r.name + ".log",
        std::vector<std::string>{std::string(job_token_env) + "=" + st->s.job_token,
                                 // how many ranks may share this node's cores (training.threads = 0)
                                 "MSOMNI_NODE_SLOTS=" + std::to_string(st->s.slots),
                                 // the rank's local index: which of the node's GPUs it binds
                                 "MSOMNI_NODE_SLOT=" + std::to_string(slot)},
        r.name + " on node " + st->s.node + attempt_note(st->s.log_dir), st->s.ranks_ignore_stop_signals,
        st->s.outliving_logger);
    st->slot_of[r.name] = slot;
    if (st->s.live_ranks) *st->s.live_ranks = st->ranks.size();
  } catch (const std::exception& e) {
    self->send(st->orchestrator, msg::rank_exited{r.name, st->s.node, -1, e.what()});
  }
}

// Reaps the ranks that ended and tells the leader (or holds the news for the next one).
void reap_ranks(agent_self self, agent_state* st) {
  for (auto it = st->ranks.begin(); it != st->ranks.end();) {
    if (auto status = it->second->poll_exit()) {
      msg::rank_exited e{it->first, st->s.node, *status, *status == 0 ? "" : it->second->log_tail()};
      if (st->orchestrator) {
        self->send(st->orchestrator, std::move(e));
      } else {  // for the next leader, which may have adopted it already
        MSOMNI_LOG(warn, "agent") << it->first << " on node " << st->s.node << " ended (status " << *status
                                  << ") while this agent had no leader; told to the next one";
        st->held_exits.push_back(std::move(e));
        if (st->ends_held) st->ends_held->Increment();
        if (st->held_exits.size() > held_exits_max) {
          st->held_exits.pop_front();
          if (st->ends_let_go) st->ends_let_go->Increment();
          MSOMNI_LOG(warn, "agent") << "node " << st->s.node << ": " << ++st->exits_let_go
                                    << " rank ends let go unreported (more than " << held_exits_max << " held)";
        }
      }
      st->slot_of.erase(it->first);
      it = st->ranks.erase(it);
      if (st->s.live_ranks) *st->s.live_ranks = st->ranks.size();
    } else {
      ++it;
    }
  }
  self->delayed_send(self, poll_interval, poll_atom::value);
}

agent_impl::behavior_type node_agent(agent_self self, std::shared_ptr<agent_state> st) {
  self->account_as("node_agent", st->s.metrics);
  if (st->s.metrics) {
    st->ends_held = &st->s.metrics->counter("msomni_agent_rank_ends_leaderless_total", {{"outcome", "held"}});
    st->ends_let_go = &st->s.metrics->counter("msomni_agent_rank_ends_leaderless_total", {{"outcome", "let_go"}});
  }
  std::filesystem::create_directories(st->s.log_dir);
  self->monitor(st->orchestrator);
  self->set_down_handler([self, st](caf::down_msg& dm) {
    if (st->s.follow_leader) {
      // A down of a leader already let go of (the shell saw its node go first) changes nothing.
      if (st->orchestrator && dm.source == st->orchestrator.address()) lose_leader(*st);
      return;
    }
    st->ranks.clear();  // SIGKILL and reap every rank of this node
    if (st->s.live_ranks) *st->s.live_ranks = 0;
    st->slot_of.clear();
    if (st->s.on_orchestrator_lost) st->s.on_orchestrator_lost();
    self->quit();
  });
  say_hello(self, *st);
  self->delayed_send(self, poll_interval, poll_atom::value);
  self->delayed_send(self, st->s.heartbeat_interval, beat_atom::value);
  return {
      [self, st](const msg::spawn_rank& r) { start_rank(self, st.get(), r); },
      [self, st](leader_atom, const msg::orchestrator_actor& next) {
        if (!st->s.follow_leader || !next) return;
        st->orchestrator = next;
        self->monitor(next);
        say_hello(self, *st);
        for (auto& e : st->held_exits) self->send(next, std::move(e));
        st->held_exits.clear();
        MSOMNI_LOG(info, "agent") << "node " << st->s.node << " joined the job's next leader; its ranks here ("
                                  << st->ranks.size() << ") rejoin it themselves";
      },
      [st](leader_atom) {
        if (st->s.follow_leader) lose_leader(*st);
      },
      [self, st](msg::node_check_request& r) -> caf::result<msg::node_check_report> {
        if (!st->s.node_checker) return msg::node_check_report{st->s.node, "", ""};
        auto rp = self->make_response_promise();
        rp.delegate(st->s.node_checker, std::move(r));
        return rp;
      },
      [self, st](msg::node_pair_probe& p) -> caf::result<msg::node_pair_result> {
        if (!st->s.node_checker)
          return msg::node_pair_result{p.pair, st->s.node, p.peer, 0.0, "this agent runs no node checks"};
        auto rp = self->make_response_promise();
        rp.delegate(st->s.node_checker, std::move(p));
        return rp;
      },
      [st](const msg::stop_rank& r) {
        if (auto it = st->ranks.find(r.name); it != st->ranks.end()) it->second->kill9();
      },
      [self, st](poll_atom) { reap_ranks(self, st.get()); },
      [self, st](beat_atom) {
        if (st->orchestrator) self->send(st->orchestrator, msg::heartbeat{st->s.node, 0, 0, ++st->seq, now_ns()});
        self->delayed_send(self, st->s.heartbeat_interval, beat_atom::value);
      },
  };
}

}  // namespace

node_agent_actor spawn_node_agent(caf::actor_system& sys, agent_settings s, msg::orchestrator_actor orchestrator) {
  auto st = std::make_shared<agent_state>();
  st->s = std::move(s);
  st->orchestrator = std::move(orchestrator);
  return sys.spawn(node_agent, st);
}

std::string find_rank_binary() {
  return find_sibling_binary("MSOMNI_RANK_BINARY", {"msomni-rank", "../msomni-rank/msomni-rank"});
}

}  // namespace msomni::agent
