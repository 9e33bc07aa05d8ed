// `msomni-memtrace record CONFIG --out DIR [--set k=v]...`: runs the job for real with
// msomni-run (its run directory is DIR/run) and collects the ranks' memory traces into
// DIR/traces: one JSONL per rank and run attempt, in the format of docs/memory_traces.md,
// plus DIR/record.json (the config, the overrides, msomni-run's exit code, the files).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace msomni::memtrace {

int run_record(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace msomni::memtrace
