// msomni-sim's command line: flags -> sim_options, and the --help text that documents
// every flag and every CSV column the trace reader accepts.
#pragma once

#include "sim_engine.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace msomni::sim {

std::string help_text();
// Every flag parse_cli accepts (for the test that each one is in help_text()).
std::vector<std::string> flag_names();
// -1: run with `o`; otherwise exit with that code (0 after --help, 2 on a bad command line).
int parse_cli(int argc, const char* const* argv, sim_options& o, std::ostream& out, std::ostream& err);

}  // namespace msomni::sim
