// The control process's loss and, with a [control] store, following the job's next leader:
// training goes on, a follower thread reads control.json and asks the leader it names to adopt
// this rank (leader_follow decides when), and the answer is taken between commands (see
// managed_rank_state.hpp).
#include "managed_rank_state.hpp"

#include "core/log.hpp"
#include "metrics/accounted_actor.hpp"
#include "metrics/metrics_pusher.hpp"

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <unistd.h>

#include <iostream>

namespace msomni::apps::rank_shell {

using namespace std::chrono_literals;

namespace {

// How often the follower thread reads control.json while the control process is gone.
constexpr auto follow_poll_interval = 200ms;

}  // namespace

// Ends the process if the control process goes away (nobody would send plans any more).
void managed_rank::watch_control() {
  auto lost = lost_flag_;
  sys_.spawn([lost, orch = link_.orchestrator(), registry = metrics_registry()](metrics::accounted_actor* self) -> caf::behavior {
    self->account_as("control_watch", registry);
    self->monitor(orch);
    self->set_down_handler([self, lost](caf::down_msg&) {
      lost->store(true);
      self->quit();
    });
    return {[](const msg::heartbeat&) {}};
  });
}

// The control process is gone for good: it went and this rank follows no leader, or no
// leader adopted it within the follow limit.
bool managed_rank::control_gone() const {
  if (!control_lost_) return false;
  if (o_.follow_control.empty()) return true;
  // Lost just now: follow_control() starts the follow limit's clock before the next command.
  std::lock_guard<std::mutex> lock(follow_mutex_);
  return follow_.past_limit(clock_.now());
}

// Between commands: with follow_control, notices the control process's loss (training goes
// on; the follower thread looks for the next leader), and takes the new leader's answer:
// adopted (reports go there from now on, the kept step records first), or refused (the
// rank leaves: exit code 0).
std::optional<int> managed_rank::follow_control() {
  if (o_.follow_control.empty()) return std::nullopt;
  // The transport says so first (the watcher's down message may come later, or not at all
  // for a proxy the transport already let go of).
  if (!control_lost_ && !hub_.node().is_up("control")) control_lost_ = true;
  if (!control_lost_) return std::nullopt;
  bool lost_now = false;
  {  // what the follower thread tells the next leader: this rank as it is now
    std::lock_guard<std::mutex> lock(follow_mutex_);
    snapshot_ = rejoin_request();
    if (!follow_.following()) {
      follow_.lost({o_.control, 0}, clock_.now(), follow_limit());
      lost_now = true;
    }
  }
  if (lost_now) {
    link_.lose();
    std::cout << "CONTROL the control process is gone; training on at epoch " << protocol_.epoch() << " from step "
              << steps_done() << " while the next leader is found through " << o_.follow_control << std::endl;
    if (!follower_.joinable()) follower_ = std::thread([this] { follow_loop(); });
  }
  auto answer = link_.take_answer();
  if (!answer) return std::nullopt;
  msg::orchestrator_actor leader;
  bool following = false;
  {
    std::lock_guard<std::mutex> lock(follow_mutex_);
    leader = asked_;
    following = follow_.following();
  }
  if (!answer->adopted) {
    checkpoints_.reset();  // a save in flight is abandoned, never committed
    std::cout << "RESULT ok left: the new leader did not adopt this rank: " << answer->reason << " step=" << steps_done()
              << std::endl;
    return 0;
  }
  if (!leader || !following) return std::nullopt;  // an answer nobody asked for
  const auto resent = link_.adopt(leader, answer->recorded_step);
  {
    std::lock_guard<std::mutex> lock(follow_mutex_);
    follow_.joined(follow_.served());
  }
  control_lost_ = false;
  watch_control();
  probe_->send_to(leader);
  if (metrics_) {
    if (pusher_) caf::anon_send_exit(pusher_, caf::exit_reason::user_shutdown);
    pusher_ = metrics::spawn_metrics_pusher(sys_, metrics_->registry(), leader, {o_.name, o_.name, o_.node});
  }
  std::cout << "CONTROL adopted by the leader at epoch " << protocol_.epoch() << ", step " << steps_done() << "; "
            << resent << " step records after step " << answer->recorded_step << " sent again" << std::endl;
  return std::nullopt;
}

msg::rank_rejoin managed_rank::rejoin_request() const {
  const auto phase = protocol_.phase();
  msg::rank_rejoin r;
  r.name = o_.name;
  r.node = o_.node;
  r.address = hub_.node().address();
  r.pid = static_cast<int64_t>(::getpid());
  r.epoch = protocol_.epoch();
  r.members = members_;
  r.rank = protocol_.rank();
  r.steps_done = steps_done();
  // Adoptable: at its epoch with no change under way (training, or done with the last step
  // and waiting to say so), not stalled or at a barrier.
  r.training = phase == rank_worker::rank_phase::training || phase == rank_worker::rank_phase::after_step ||
               phase == rank_worker::rank_phase::finishing || phase == rank_worker::rank_phase::done;
  return r;
}

// The follower thread: while the control process is gone, reads control.json for the next
// leader's address, connects, and asks it to adopt this rank (again every
// leader_retry_interval while it does not answer).
void managed_rank::follow_loop() {
  while (!stop_follow_) {
    std::this_thread::sleep_for(follow_poll_interval);
    if (!control_lost_ || stop_follow_) continue;
    const auto file = read_control_file(o_.follow_control);  // replaced whole by each leader
    std::optional<leader_named> named;
    if (file) named = leader_named{file->address, file->pid};
    {
      std::lock_guard<std::mutex> lock(follow_mutex_);
      if (!follow_.try_now(named, false, clock_.now())) continue;
    }
    const auto& address = named->address;
    if (!hub_.node().is_up("control")) {
      hub_.node().connect(address);
      if (!hub_.node().wait_up("control", leader_connect_wait)) continue;
    }
    const auto leader = gw_.remote_actor<msg::orchestrator_actor>("control", "orchestrator");
    msg::rank_rejoin ask;
    {
      std::lock_guard<std::mutex> lock(follow_mutex_);
      asked_ = leader;
      ask = snapshot_;
    }
    caf::anon_send(leader, ask);
    std::cout << ("CONTROL asked the leader at " + address + " to adopt this rank (epoch " + std::to_string(ask.epoch) +
                  ", step " + std::to_string(ask.steps_done) + ")\n")
              << std::flush;
  }
}

// rank_left, acknowledged, so the orchestrator knows before the process (and its UCX
// endpoint) goes. A rank that follows the leader and has none now first waits for one (up
// to the follow limit), so that its leaving reaches whoever leads the job.
void managed_rank::tell_leaving(const msg::rank_left& left) {
  while (control_lost_ && !control_gone()) {
    if (follow_control()) break;  // refused: nobody to tell
    std::this_thread::sleep_for(100ms);
  }
  const auto to = link_.orchestrator();
  if (!to || control_lost_) {
    MSOMNI_LOG(warn, "msomni-rank") << "rank_left not sent: no control process leads the job";
    return;
  }
  caf::scoped_actor self{sys_};
  self->request(to, 10s, left).receive([](bool) {}, [&](caf::error&) {
    MSOMNI_LOG(warn, "msomni-rank") << "rank_left was not acknowledged";
  });
}

}  // namespace msomni::apps::rank_shell
