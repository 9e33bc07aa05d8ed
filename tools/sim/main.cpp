// msomni-sim: trace-driven cluster simulator comparing co-location policies.
// Reads the published traces as they are and prints/writes a JSON summary, or with --compare
// one table (or JSON) of the three policies on the same trace.
#include "sim_cli.hpp"
#include "sim_engine.hpp"

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace msomni;

int main(int argc, char** argv) {
  sim::sim_options o;
  if (int rc = sim::parse_cli(argc, argv, o, std::cout, std::cerr); rc >= 0) return rc;
  try {
    auto tr = sim::read_trace(o.trace_path);
    std::string json;
    if (o.compare) {
      std::vector<sim::policy_run> runs;
      for (const auto p : sim::compared_policies) {
        sim::sim_options each = o;
        each.policy = p;
        runs.push_back({each, sim::run_simulation(each, tr)});
      }
      json = o.json ? sim::compare_json(runs) : sim::compare_table(runs);
    } else {
      json = sim::to_json(o, sim::run_simulation(o, tr));
    }
    if (o.out_path.empty()) std::cout << json;
    else {
      std::ofstream out(o.out_path);
      if (!out) throw std::runtime_error(o.out_path + ": cannot write");
      out << json;
    }
  } catch (const std::exception& e) {
    std::cerr << "msomni-sim: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
