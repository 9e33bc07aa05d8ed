// msomni-memtrace: tools for the memory traces of training ranks. The first argument names
// the subcommand; each lives in its own file.
#include "memtrace_eval.hpp"
#include "memtrace_record.hpp"

#include <iostream>
#include <string>
#include <vector>

namespace {

struct subcommand {
  const char* name;
  const char* what;
  int (*run)(const std::vector<std::string>&, std::ostream&, std::ostream&);
};

constexpr subcommand subcommands[] = {
    {"record", "run a job for real and collect its ranks' memory traces", msomni::memtrace::run_record},
    {"eval", "replay traces through the memory predictors and score their forecasts", msomni::memtrace::run_eval},
};

void usage(std::ostream& o) {
  o << "Usage: msomni-memtrace SUBCOMMAND [OPTIONS]\n\nSubcommands:\n";
  for (const auto& s : subcommands) o << "  " << s.name << "  " << s.what << "\n";
  o << "\nRun 'msomni-memtrace SUBCOMMAND --help' for its options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help") {
    usage(std::cout);
    return 0;
  }
  for (const auto& s : subcommands)
    if (name == s.name) return s.run(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
  std::cerr << "msomni-memtrace: unknown subcommand '" << name << "'\n";
  usage(std::cerr);
  return 2;
}
