// Which stop wins and how it is named (stop_precedence): the hand-over of a deposed leader
// whose ranks follow the job's leader, the process's own signal, the loss of the leadership,
// a node agent's signal, and `msomni stop` before any of them.
#include "stop_precedence.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace msomni::orchestrator;
using kind = stop_decision::kind;

TEST_CASE("nothing asks for a stop: none") {
  stop_precedence p;
  CHECK(p.next({}).what == kind::none);
}

TEST_CASE("a deposed leader whose ranks follow the leader hands the job over, even under a signal") {
  stop_precedence p;
  stop_inputs in;
  in.deposed = true;
  in.ranks_follow_leader = true;
  in.own_signal = true;
  in.own_signal_number = SIGTERM;
  const auto d = p.next(in);
  CHECK(d.what == kind::hand_over);
  CHECK(d.detail ==
        "this control process no longer leads the job (the job's leadership was lost); the ranks train on and rejoin "
        "the job's next leader");
  CHECK(d.finish_reason == "deposed: the ranks train on under the next leader");
  p.sent(d);
  CHECK(p.by_deposition());
  CHECK_FALSE(p.by_sigterm());
  CHECK(p.next(in).what == kind::none);  // once
  in.deposed_why = "the store names node-b";
  CHECK(stop_precedence{}.next(in).detail.find("(the store names node-b)") != std::string::npos);
}

TEST_CASE("the loss of the leadership without followers stops the job, named so, not a preemption") {
  stop_precedence p;
  stop_inputs in;
  in.deposed = true;
  in.own_signal = true;
  in.own_signal_number = SIGTERM;
  const auto d = p.next(in);
  CHECK(d.what == kind::stop);
  CHECK(d.detail == "the loss of the job's leadership (another control process leads it)");
  p.sent(d);
  CHECK(p.by_deposition());
  CHECK_FALSE(p.by_sigterm());
}

TEST_CASE("the process's own signal wins over an agent's, and SIGTERM is a preemption") {
  stop_precedence p;
  CHECK(p.on_agent_signal("node-a", SIGINT, "scancel").empty());
  stop_inputs in;
  in.own_signal = true;
  in.own_signal_number = SIGTERM;
  const auto d = p.next(in);
  CHECK(d.detail == "SIGTERM (a preemption)");
  CHECK(d.by_sigterm);
  in.own_signal_number = 0;
  CHECK(p.next(in).detail == "a stop signal");
}

TEST_CASE("an agent's signal: the first stop signal counts, others are dropped with the reason") {
  stop_precedence p;
  CHECK(p.on_agent_signal("node-a", SIGHUP, "") == "signal " + std::to_string(SIGHUP) + " is not a stop signal");
  CHECK(p.next({}).what == kind::none);
  CHECK(p.on_agent_signal("node-a", SIGTERM, "slurm").empty());
  CHECK(p.on_agent_signal("node-b", SIGINT, "").empty());  // taken quietly, changes nothing
  const auto d = p.next({});
  CHECK(d.what == kind::stop);
  CHECK(d.detail == "SIGTERM at node node-a's agent (from slurm) (a preemption)");
  p.sent(d);
  CHECK(p.by_sigterm());
}

TEST_CASE("msomni stop first: a later signal adds nothing") {
  stop_precedence p;
  p.requested();
  stop_inputs in;
  in.own_signal = true;
  in.own_signal_number = SIGTERM;
  CHECK(p.next(in).what == kind::none);
  CHECK_FALSE(p.by_sigterm());
}
