// stop_precedence (see stop_precedence.hpp).
#include "stop_precedence.hpp"

#include <csignal>

namespace msomni::orchestrator {

std::string stop_precedence::on_agent_signal(const std::string& node, int signal, const std::string& source) {
  if (signal != SIGTERM && signal != SIGINT) return "signal " + std::to_string(signal) + " is not a stop signal";
  if (agent_signal_ != 0) return {};
  agent_signal_ = signal;
  agent_signal_from_ = "node " + node + "'s agent" + (source.empty() ? "" : " (from " + source + ")");
  return {};
}

stop_decision stop_precedence::next(const stop_inputs& in) const {
  stop_decision d;
  if (sent_) return d;
  if (in.deposed && in.ranks_follow_leader) {
    // The ranks train on and follow the next leader, which adopts them: nothing is sent to
    // them from here any more.
    d.what = stop_decision::kind::hand_over;
    d.by_deposition = true;
    const std::string why = in.deposed_why.empty() ? "the job's leadership was lost" : in.deposed_why;
    d.detail = "this control process no longer leads the job (" + why +
               "); the ranks train on and rejoin the job's next leader";
    d.finish_reason = "deposed: the ranks train on under the next leader";
    return d;
  }
  if (!in.own_signal && !in.deposed && agent_signal_ == 0) return d;
  d.what = stop_decision::kind::stop;
  const int sig = in.own_signal ? in.own_signal_number : agent_signal_;
  d.by_deposition = in.deposed;
  d.by_sigterm = !in.deposed && sig == SIGTERM;
  const std::string at = !in.own_signal && !in.deposed ? " at " + agent_signal_from_ : "";
  d.detail = in.deposed        ? "the loss of the job's leadership (another control process leads it)"
             : sig == SIGTERM ? "SIGTERM" + at + " (a preemption)"
             : sig == SIGINT  ? "SIGINT" + at
                              : "a stop signal";
  return d;
}

void stop_precedence::sent(const stop_decision& d) {
  if (d.what == stop_decision::kind::none || sent_) return;
  sent_ = true;
  by_deposition_ = d.by_deposition;
  by_sigterm_ = d.by_sigterm;
}

}  // namespace msomni::orchestrator
