// msomni: control CLI for checkpoints today and, later, a running job (status, scale-down,
// ...). Dispatches the first argument to a subcommand listed in `commands`.
#include "commands.hpp"

#include <iostream>

namespace {

const msomni::cli::command commands[] = {
    {"ckpt", "list, verify and export checkpoints: msomni ckpt ls|verify|export DIR",
     msomni::cli::run_ckpt},
};

void usage(std::ostream& os) {
  os << "usage: msomni COMMAND [ARGS...]\n\ncommands:\n";
  for (const auto& c : commands) os << "  " << c.name << "  " << c.summary << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? msomni::cli::exit_usage : msomni::cli::exit_ok;
  }
  const std::string name = argv[1];
  for (const auto& c : commands)
    if (name == c.name) return c.run({argv + 2, argv + argc}, std::cout, std::cerr);
  std::cerr << "msomni: unknown command '" << name << "'\n\n";
  usage(std::cerr);
  return msomni::cli::exit_usage;
}
