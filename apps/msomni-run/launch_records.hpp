// What msomni-run's control process writes into the run directory besides the orchestrator's
// journal lines: control.json, preflight.json and the summary (each replaced whole), the
// previous leader's token, and the events that open a run (the election or takeover, the
// pre-flight, the attempt and its resume).
#pragma once

#include "control_election.hpp"
#include "resume_check.hpp"
#include "run_journal.hpp"
#include "run_summary.hpp"

#include "config/job_config.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace msomni::apps {

// `text` replaces `path` whole or not at all (the checkpoint store's small-file write: an
// exclusively created temporary of this process, fsynced, renamed, the directory fsynced; the
// temporary is removed if any step fails). An empty result is success, else what failed.
std::string replace_file(const std::filesystem::path& path, const std::string& text);
void write_control_file(const std::filesystem::path& run_dir, const nlohmann::ordered_json& control);
// The job's token as the previous leader's control.json gives it ("" when it cannot be read,
// or others than its owner could read it). A leader that takes over keeps it: the ranks that
// trained on prove it when they rejoin.
std::string previous_token(const std::filesystem::path& run_dir);
// summary.json and summary.txt; false (and said on stderr) when either cannot be written.
bool write_summary(const std::filesystem::path& run_dir, const orchestrator::run_facts& facts,
                   const orchestrator::run_end& end);

// The election that made this process the job's leader, and from now on every journal event
// in the store's event log as well.
void journal_leadership(orchestrator::run_journal& journal, control_role& control, const config::job_config& cfg);
// The pre-flight ran before the run directory was ours: its report is kept there now, and
// journaled.
void keep_preflight(orchestrator::run_journal& journal, const std::filesystem::path& run_dir,
                    const nlohmann::ordered_json& preflight);
// attempt_started, and on a resume what it loads and the config changes check_resume accepted.
void journal_attempt(orchestrator::run_journal& journal, const std::filesystem::path& ckpt_dir, bool resume, bool fresh,
                     const std::optional<resume_check>& resume_from);

}  // namespace msomni::apps
