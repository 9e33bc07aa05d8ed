// Where a managed rank's reports go. Live: straight to the control process's orchestrator.
// With a control store the rank outlives its control process: once that is gone the link is
// lost, and reports wait for the next leader. Step records are kept in a bounded history
// (every record, live or not, the newest history_max of them): a leader that adopts the rank
// gets again those after the last step its metrics hold, so a record the dead leader never
// wrote, or one sent while no leader existed, is written once. Checkpoint reports made while
// lost are held too (the newest checkpoints_held_max) and go to an adopting leader after the
// records, which journals them. Other reports (a stall, a memory fit) are dropped while lost,
// and counted: a stall makes the rank unadoptable anyway.
//
// Thread-safe: the training thread sends records, the checkpoint writer its results, and the
// rank's worker actor hands over the new leader's answer.
#pragma once

#include "messages/actor_interfaces.hpp"

#include <caf/actor.hpp>
#include <caf/send.hpp>

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

namespace msomni::apps {

class control_link {
 public:
  explicit control_link(size_t history_max = 4096, size_t checkpoints_held_max = 64)
      : history_max_(history_max), checkpoints_held_max_(checkpoints_held_max) {}

  void attach(msg::orchestrator_actor orchestrator);  // live, reporting to it
  void lose();                           // its control process is gone
  bool live() const;
  msg::orchestrator_actor orchestrator() const;  // invalid while lost

  // A step record: kept, and sent at once while live.
  void send_record(const msg::step_record& r);
  // A checkpoint's report: sent while live, held for an adopting leader while lost.
  void send_checkpoint(const msg::checkpoint_done& d);
  // Any other report: sent while live, dropped (and counted) while lost.
  template <class T>
  void send(T&& m) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (orchestrator_) caf::anon_send(orchestrator_, std::forward<T>(m));
    else ++dropped_;
  }

  // A new leader adopted the rank: live again, reporting to `orchestrator`, after the kept
  // records of steps after `recorded_step` went to it in order, then the checkpoint reports
  // held. Returns how many reports went.
  size_t adopt(msg::orchestrator_actor orchestrator, uint64_t recorded_step);

  // The leader's answer to a rank_rejoin, from the worker actor; taken by the training thread.
  void put_answer(msg::rejoin_answer a);
  std::optional<msg::rejoin_answer> take_answer();

  struct counts {
    uint64_t kept = 0;         // records held now
    uint64_t overflowed = 0;   // records (or held checkpoint reports) let go of while lost, never sent
    uint64_t dropped = 0;      // other reports dropped while lost
    uint64_t resent = 0;       // records and held checkpoint reports sent to an adopting leader
  };
  counts totals() const;

 private:
  const size_t history_max_;
  const size_t checkpoints_held_max_;
  std::deque<msg::checkpoint_done> held_checkpoints_;
  mutable std::mutex mutex_;
  msg::orchestrator_actor orchestrator_;
  std::deque<msg::step_record> history_;
  std::deque<bool> sent_;  // beside history_: whether it reached a live link
  std::optional<msg::rejoin_answer> answer_;
  uint64_t overflowed_ = 0, dropped_ = 0, resent_ = 0;
};

}  // namespace msomni::apps
