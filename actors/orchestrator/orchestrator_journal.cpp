// The orchestrator shell's records: event lines (journal, inspector timeline, control series,
// the run's tally), the memory events the inspector shows, and the metrics reports the ranks
// and agents push (see orchestrator_state.hpp).
#include "orchestrator_state.hpp"

#include "core/clock.hpp"
#include "core/log.hpp"

#include <iostream>

namespace msomni::orchestrator::shell {

// Every event line carries the job's step and epoch; `rank` and `node` where the event is
// about one.
void journal(shell_state& st, const std::string& kind, const std::string& detail, const std::string& rank,
             const std::string& node, const std::vector<std::pair<std::string, int64_t>>& numbers) {
  event_context ctx;
  ctx.step = st.progress.last_step();
  ctx.epoch = st.core.epoch();
  ctx.rank = rank;
  ctx.node = node;
  for (const auto& [name, value] : numbers) ctx.fields[name] = value;
  if (st.env.journal) st.env.journal->event(kind, detail, ctx);
  if (st.control) st.control->on_event(kind, detail);
  st.tally.on_event(kind);
  ordered_json e = ordered_json::object();
  e["time_ms"] = unix_ms();
  e["kind"] = kind;
  e["epoch"] = st.core.epoch();
  e["step"] = st.progress.last_step();
  if (!rank.empty()) e["rank"] = rank;
  if (!node.empty()) e["node"] = node;
  e["detail"] = detail;
  st.timeline.push_back(std::move(e));
  if (st.timeline.size() > timeline_capacity) st.timeline.pop_front();
  std::cerr << (st.env.progress_on_tty ? "\n" : "") << "msomni-run: " << kind << ": " << detail << "\n";
}

// A journal that cannot be written ends the job: going on would leave no record of it.
void stop_if_journal_failed(actor self, shell_state& st) {
  if (!st.env.journal || !st.env.journal->failed() || st.done) return;
  execute(self, st, {finish_job{false, "the run journal cannot be written (" + st.env.journal->failure() +
                                           "); stopping rather than training without a record"}});
}

void remember_memory_event(shell_state& st, const char* kind, const std::string& detail, uint64_t step,
                           const std::string& rank) {
  ordered_json e = ordered_json::object();
  e["time_ms"] = unix_ms();
  e["kind"] = kind;
  e["epoch"] = st.core.epoch();
  e["step"] = step;
  e["rank"] = rank;
  e["detail"] = detail;
  st.memory_events.push_back(std::move(e));
  if (st.memory_events.size() > memory_events_capacity) st.memory_events.pop_front();
}

// Reports pushed by ranks and agents; a refused one is logged the first time for its source
// and then every 100th time (the count is in msomni_metrics_reports_total{result="refused"}).
void take_report(shell_state& st, const msg::metrics_report& r) {
  if (!st.env.metrics) return;
  std::string why;
  if (st.env.metrics->accept(r, why)) return;
  if (st.refused_reports.size() > 1024) st.refused_reports.clear();  // bounded: a flood of names
  if (st.refused_reports[r.source]++ % 100 == 0) {
    MSOMNI_LOG(warn, "orchestrator") << "dropped a metrics report from " << r.source << ": " << why;
  }
}

// The series of processes that are gone end with them: only members still there and agents
// still connected keep theirs.
void forget_departed_sources(shell_state& st) {
  if (!st.env.metrics) return;
  for (const auto& source : st.env.metrics->sources()) {
    const auto m = st.core.members().find(source);
    const bool member = m != st.core.members().end() && m->second.state != member_state::left &&
                        m->second.state != member_state::dead;
    if (!member && !st.agents.count(source)) st.env.metrics->forget(source);
  }
}

}  // namespace msomni::orchestrator::shell
