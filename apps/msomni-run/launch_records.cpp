// launch_records (see launch_records.hpp).
#include "launch_records.hpp"

#include "launch_plan.hpp"

#include "checkpoint_store.hpp"
#include "durable_io.hpp"
#include "control_leadership.hpp"

#include "core/json_text.hpp"
#include "core/secret_file.hpp"

#include <unistd.h>

#include <iostream>

namespace msomni::apps {

namespace fs = std::filesystem;

std::string replace_file(const fs::path& path, const std::string& text) {
  try {
    ckpt::write_file_atomically(path, text, "." + path.filename().string() + ".tmp-" + std::to_string(::getpid()),
                                nullptr);
  } catch (const std::exception& e) {
    return "cannot write " + path.string() + ": " + e.what();
  }
  return {};
}

void write_control_file(const fs::path& run_dir, const nlohmann::ordered_json& control) {
  write_private_file((run_dir / "control.json").string(), json_text(control) + "\n");
}

std::string previous_token(const fs::path& run_dir) {
  try {
    return read_secret_file((run_dir / "control.json").string());
  } catch (const std::exception&) {
    return {};
  }
}

bool write_summary(const fs::path& run_dir, const orchestrator::run_facts& facts, const orchestrator::run_end& end) {
  bool ok = true;
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"summary.json", json_text(orchestrator::summary_json(facts, end)) + "\n"},
        std::pair<std::string, std::string>{"summary.txt", orchestrator::summary_text(facts, end)}}) {
    if (const auto err = replace_file(run_dir / name, text); !err.empty()) {
      std::cerr << "msomni-run: the run's summary was not saved: " << err << "\n";
      ok = false;
    }
  }
  return ok;
}

void journal_leadership(orchestrator::run_journal& journal, control_role& control, const config::job_config& cfg) {
  const auto& e = control.elected;
  orchestrator::event_context ctx;
  ctx.fields = {{"term", e.term},
                {"store", cfg.control.store},
                {"lease_ttl_s", cfg.control.lease_ttl_s},
                {"leader", control.leadership->id()}};
  const bool takeover = e.what == control::takeover::take_over;
  const int64_t replicas = takeover_replicas(e.previous.replicas, cfg);
  if (takeover) {
    ctx.fields["previous_leader"] = e.previous.leader;
    ctx.fields["previous_term"] = e.previous.term;
    ctx.fields["previous_step"] = e.previous.step;
    ctx.fields["previous_recoveries"] = e.previous.recoveries;
    ctx.fields["previous_epoch"] = e.previous.epoch;
    ctx.fields["replicas"] = replicas;
    ctx.fields["waited_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(e.waited).count();
    ctx.step = e.previous.step;
  }
  journal.observe_events([leadership = control.leadership.get()](const nlohmann::ordered_json& line) {
    leadership->record_event(line);
  });
  journal.event(takeover ? "control_takeover" : "control_elected",
                takeover ? "took over the job from " + e.previous.leader + " (term " + std::to_string(e.previous.term) +
                               ", last step " + std::to_string(e.previous.step) + ", " +
                               std::to_string(e.previous.recoveries) + " recoveries spent, epoch " +
                               std::to_string(e.previous.epoch) + ") as term " + std::to_string(e.term) +
                               "; its ranks are adopted if they trained on and all rejoin, else ranks resume from the newest "
                               "checkpoint on " + std::to_string(replicas) + " replicas"
                         : "leads the job in the control store " + cfg.control.store + " (term " + std::to_string(e.term) + ")",
                ctx);
}

void keep_preflight(orchestrator::run_journal& journal, const fs::path& run_dir, const nlohmann::ordered_json& preflight) {
  if (!preflight.is_object()) return;
  if (const auto err = replace_file(run_dir / "preflight.json", json_text(preflight) + "\n"); !err.empty())
    std::cerr << "msomni-run: the pre-flight report was not saved: " << err << "\n";
  orchestrator::event_context ctx;
  ctx.fields["verdict"] = preflight.value("verdict", "");
  ctx.fields["level"] = preflight.value("level", "");
  auto& warned = ctx.fields["warned"] = nlohmann::ordered_json::array();
  size_t passed = 0, skipped = 0;
  for (const auto& c : preflight.value("checks", nlohmann::ordered_json::array())) {
    const auto status = c.value("status", "");
    if (status == "warn") warned.push_back(c.value("id", ""));
    passed += status == "pass";
    skipped += status == "skipped";
  }
  journal.event("preflight", "pre-flight " + ctx.fields["verdict"].get<std::string>() + ": " + std::to_string(passed) +
                                 " passed, " + std::to_string(warned.size()) + " warned, " + std::to_string(skipped) +
                                 " skipped (preflight.json)",
                ctx);
}

void journal_attempt(orchestrator::run_journal& journal, const fs::path& ckpt_dir, bool resume, bool fresh,
                     const std::optional<resume_check>& resume_from) {
  const auto attempt = "attempt " + std::to_string(journal.attempt());
  journal.event("attempt_started",
                resume ? attempt + " starts: msomni-run started on an existing checkpoint; the ranks resume from the newest "
                                   "one that verifies (latest names step " +
                             std::to_string(ckpt::latest_step(ckpt_dir).value_or(0)) + "), as their rank_ready events say"
                       : attempt + " resumes from step 0: msomni-run started" + (fresh ? " with --fresh" : ""));
  if (resume) {
    // The config changes check_resume accepted (keys that may change on a resume), by key.
    orchestrator::event_context ctx;
    std::string changes;
    if (resume_from) {
      ctx.step = resume_from->step;
      ctx.fields["config_changes"] = nlohmann::ordered_json::array();
      for (const auto& c : resume_from->comparison.accepted)
        ctx.fields["config_changes"].push_back({{"key", c.key}, {"saved", c.saved}, {"now", c.now}});
      ctx.fields["config_compared"] = resume_from->comparison.saved_config_known;
      changes = !resume_from->comparison.saved_config_known ? "; the checkpoint records no config, so none was compared"
                : resume_from->comparison.accepted.empty()   ? "; the config is the checkpoint's"
                                                             : "; config changes accepted: " + accepted_summary(*resume_from);
    }
    journal.event("resume",
                  "ranks load the newest checkpoint under " + ckpt_dir.string() + " that verifies (latest points at " +
                      ckpt::latest_pointer_of(ckpt_dir).value_or("") + ")" + changes,
                  ctx);
    if (resume_from && !resume_from->comparison.accepted.empty())
      std::cerr << "msomni-run: resuming with changed keys: " << accepted_summary(*resume_from) << "\n";
  }
}

}  // namespace msomni::apps
