// `msomni-memtrace eval`: replays memory traces through every memory predictor and prints
// one table per trace (or JSON with one entry per predictor).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace msomni::memtrace {

// args: what follows "eval" on the command line. Returns the exit status: 0, 1 for an
// unreadable or malformed trace (FILE:LINE on err), 2 for a bad command line.
int run_eval(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace msomni::memtrace
