// Which stop wins, and what it is called (pure: no clock, no signal handler, no actor). The
// shell hands it what it saw on each tick: its own stop signal, the loss of the job's
// leadership, a stop signal a node agent reported. A deposed leader whose ranks follow the
// job's leader hands the job over (the ranks train on); any other cause asks the elastic core
// to stop, and the first accepted stop is the one the job's outcome names.
#pragma once

#include <string>

namespace msomni::orchestrator {

struct stop_inputs {
  bool own_signal = false;    // this process got SIGINT or SIGTERM
  int own_signal_number = 0;  // which one, 0 when unknown
  bool deposed = false;       // another control process leads the job now
  std::string deposed_why;    // why, once deposed ("" when not said)
  bool ranks_follow_leader = false;
};

struct stop_decision {
  enum class kind { none, hand_over, stop };
  kind what = kind::none;
  // hand_over: the "deposed" event's detail and the finish reason; stop: the cause, as the
  // "stop" event names it ("SIGTERM at node a's agent (a preemption)").
  std::string detail;
  std::string finish_reason;
  bool by_deposition = false;
  bool by_sigterm = false;
};

class stop_precedence {
 public:
  // A node agent reported that the cluster's engine signalled its processes: "" when taken
  // (the first stop signal counts), else why it is dropped.
  std::string on_agent_signal(const std::string& node, int signal, const std::string& source);
  // What to do now; none once a stop was carried out (sent) or while nothing asks for one.
  stop_decision next(const stop_inputs& in) const;
  // The decision was carried out: the hand-over, or a stop the elastic core accepted.
  void sent(const stop_decision& d);
  // `msomni stop` was accepted: a later signal adds nothing.
  void requested() { sent_ = true; }
  bool stop_sent() const { return sent_; }
  bool by_sigterm() const { return by_sigterm_; }
  bool by_deposition() const { return by_deposition_; }

 private:
  bool sent_ = false;
  bool by_sigterm_ = false;     // the first stop accepted came as SIGTERM (a preemption)
  bool by_deposition_ = false;  // the first stop accepted came from losing the leadership
  int agent_signal_ = 0;        // 0 before any
  std::string agent_signal_from_;
};

}  // namespace msomni::orchestrator
