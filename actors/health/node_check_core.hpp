// The multi-node pre-flight's decisions: which node agents to ask for their node's checks,
// which pairs of nodes run a timed all-reduce, which node is a straggler, and when the
// agents may be handed to the job. Pure: the control process's shell sends the requests,
// hands the answers in, and carries out the actions.
//
//   an agent joins        --> ask_check (its report: the checks of docs/health_check.md)
//   every [[cluster.nodes]] node reported, none failed, two or more nodes
//                         --> ask_pair, one pair at a time (every pair up to 8 nodes, else each
//                             node with its next two in the ring), both ends timed
//   the last pair in      --> the multinode checks, then done (the combined report) and an
//                             admit per node; a failed check anywhere: done with the reason
//   an agent joining later (a replacement node) --> checked alone: admit, or refuse
//   the gather deadline (the shell's timer: as long after the first agent joined as the job
//   waits for its agents to place ranks) --> listed nodes that have not joined are missing:
//                            the check goes on without them (listed in the report's
//                            `missing`), and one joining later is checked alone
//
// A straggler is a node whose fastest pairing is slower than straggler_factor times the
// median of every node's fastest pairing (three nodes or more): a slow pair slows both its
// ends, so a node is blamed only when every pairing it had was slow (the re-pairing idea).
#pragma once

#include "health_core.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace msomni::health {

struct node_check_settings {
  std::vector<std::string> nodes;  // the initial check waits for every one of them
  double straggler_factor = 2.0;
  int64_t pair_elements = 1 << 22;  // floats per all-reduce (16 MiB)
  int64_t pair_rounds = 5;          // the median round is the pair's time
  size_t all_pairs_up_to = 8;       // nodes; above it each node pairs with its next two
};

namespace node_checks {
struct ask_check {
  std::string node;
};
// `dialer` connects to `listener`'s probe address; both get a request.
struct ask_pair {
  uint64_t pair = 0;
  std::string dialer, listener;
  std::string listener_address;
  std::string dialer_address;
};
struct admit {
  std::string node;
};
// A node that joined after the start and failed its checks: it gets no rank.
struct refuse {
  std::string node;
  std::string reason;
};
// The initial check is over: the combined report (docs/health_check.md), and why it failed.
struct done {
  bool failed = false;
  std::string reason;
  nlohmann::ordered_json report;
};
using action = std::variant<ask_check, ask_pair, admit, refuse, done>;
}  // namespace node_checks

class node_check_core {
 public:
  // `control_report`: the control node's own report (msomni-run's pre-flight), the object
  // the combined report extends.
  node_check_core(node_check_settings s, nlohmann::ordered_json control_report);

  std::vector<node_checks::action> on_agent(const std::string& node);
  // The agent's answer; an unparsable or empty report fails that node.
  std::vector<node_checks::action> on_report(const std::string& node, const std::string& report_json,
                                             const std::string& probe_address);
  // The agent did not answer (timeout, gone): its node fails.
  std::vector<node_checks::action> on_no_report(const std::string& node, const std::string& why);
  // One end of a pair; `error` non-empty when it failed (also a timeout of that end).
  std::vector<node_checks::action> on_pair_result(uint64_t pair, const std::string& node, double median_ms,
                                                  const std::string& error);
  // The initial check stops waiting for listed nodes whose agent has not joined (missing()
  // says which). Nothing happens once the check is pairing or over.
  std::vector<node_checks::action> on_gather_deadline();
  const std::vector<std::string>& missing() const { return missing_; }

  bool over() const { return over_; }  // the initial check ended (passed or failed)
  // The verdict of the node's report as on_report read it ("" before one came in).
  std::string verdict_of(const std::string& node) const;

  // The pairs a set of nodes runs, in order (exposed for the tests).
  static std::vector<std::pair<std::string, std::string>> plan_pairs(const std::vector<std::string>& nodes,
                                                                     size_t all_pairs_up_to);
  // The multinode checks from each pair's time (nullopt: it failed, with the reason in `errors`).
  struct pair_outcome {
    std::string a, b;
    std::optional<double> ms;
    std::string error;
  };
  static std::vector<check_result> judge_pairs(const std::vector<std::string>& nodes,
                                               const std::vector<pair_outcome>& pairs, double straggler_factor);

 private:
  struct node_entry {
    bool joined = false;
    std::optional<nlohmann::ordered_json> report;
    std::string verdict;  // of its report
    std::string address;  // its pair probe
  };
  struct pair_run {
    pair_outcome outcome;
    std::set<std::string> answered;
  };
  std::vector<node_checks::action> maybe_next();
  std::vector<node_checks::action> finish();
  node_entry& entry(const std::string& node);

  node_check_settings s_;
  std::vector<std::string> missing_;  // listed nodes the initial check stopped waiting for
  nlohmann::ordered_json control_;
  std::map<std::string, node_entry> nodes_;
  std::vector<std::string> order_;  // listed nodes first, then others as they joined
  std::vector<pair_run> pairs_;
  size_t next_pair_ = 0;
  bool pairing_ = false;
  bool over_ = false;
};

}  // namespace msomni::health
