// msomni-sim: trace-driven cluster simulator comparing co-location policies.
// Reads the published traces as they are and prints/writes a JSON summary.
#include "sim_cli.hpp"
#include "sim_engine.hpp"

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

using namespace msomni;

int main(int argc, char** argv) {
  sim::sim_options o;
  if (int rc = sim::parse_cli(argc, argv, o, std::cout, std::cerr); rc >= 0) return rc;
  try {
    auto tr = sim::read_trace(o.trace_path);
    auto r = sim::run_simulation(o, tr);
    std::string json = sim::to_json(o, r);
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
