// What the ranks report while they train: step records (journaled once the job's state
// descends from them, then judged), committed and failed checkpoints, memory samples, and
// what a step did under a memory fit request; and the memory predictor's advice (see
// orchestrator_state.hpp).
#include "orchestrator_state.hpp"

#include "core/clock.hpp"

#include <cstdio>
#include <iostream>

namespace msomni::orchestrator::shell {

namespace {

void journal_gap(shell_state& st, const progress_core::step_gap& gap) {
  journal(st, "steps_unrecorded",
          "steps " + std::to_string(gap.first) + ".." + std::to_string(gap.last) +
              (gap.earlier ? " were trained by an earlier attempt and are in the checkpoint this one loaded, but "
                             "their records never reached metrics.jsonl (that attempt's control process ended "
                             "between the checkpoint's commit and their journaling)"
                           : " were trained but their records never reached this control process (a rank keeps a "
                             "bounded history of them while no control process answers, and the oldest went "
                             "first); metrics.jsonl lacks them"),
          "", "", {{"first", static_cast<int64_t>(gap.first)}, {"last", static_cast<int64_t>(gap.last)}});
}

}  // namespace

void count_fit(shell_state& st, const char* result) {
  if (st.env.metrics) st.env.metrics->own()->counter("msomni_memory_fits_total", {{"result", result}}).Increment();
}

void on_step_record(actor self, shell_state& st, msg::step_record r) {
  r.loss = msg::value_of(r.loss, r.loss_kind);
  r.grad_norm = msg::value_of(r.grad_norm, r.grad_norm_kind);
  auto released = st.lineage.on_record(r);
  for (const auto& h : released.held) journal_step(self, st, h);
  if (released.record) journal_step(self, st, *released.record);
}

// A step record the job's state descends from: its metrics line, notes and progress, then
// what the cores make of it. Once the job has ended (failed, stopped or finished) a late
// record of a rank still winding down is after the outcome and is not journaled: the
// outcome and its counts are final.
void journal_step(actor self, shell_state& st, const msg::step_record& r) {
  if (st.done) return;
  const auto now = st.clock.now();
  const auto line = st.progress.on_step(r, now, unix_ms());
  if (line) {
    if (st.control) st.control->on_step(r);
    st.tally.on_step(*line);
    auto record = metrics_json(*line);
    st.memory->annotate(record, r.step);
    if (st.env.journal && !st.env.journal->metric(std::move(record))) stop_if_journal_failed(self, st);
    if (auto gap = st.progress.take_gap()) journal_gap(st, *gap);
    if (auto note = st.progress.take_bad_samples_note()) journal(st, "bad_samples", *note);
    for (const auto& n : st.data.on_step(r)) journal(st, n.kind, n.detail);
    const bool tty = st.env.progress_on_tty;
    if (tty || r.step % 10 == 0 || st.progress.finished())
      std::cerr << (tty ? "\r" : "") << st.progress.progress_line() << (tty ? "   " : "\n") << std::flush;
  }
  execute(self, st, st.core.on_step(r.step, r.world_size, now));
  if (line) judge_health(self, st, r, now);
  if (line && !st.done) judge_utilisation(self, st, r, now);
}

void on_checkpoint_done(shell_state& st, const msg::checkpoint_done& d) {
  if (st.control) st.control->on_checkpoint(d);
  st.tally.on_checkpoint(d.step, d.ok);
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.2f", static_cast<double>(d.bytes) / (1 << 20));
  if (d.ok) journal(st, "checkpoint", "step " + std::to_string(d.step) + " committed (" + mb + " MiB over all shards)");
  else journal(st, "checkpoint_failed", "step " + std::to_string(d.step) + " not committed: " + d.error +
                                            "; the previous checkpoint stays");
}

// From every rank after each step and while one runs; not acknowledged. A repeated one
// writes its line again (the trace marks it "resume"); a malformed or foreign one is dropped.
void on_memory_sample(actor self, shell_state& st, const msg::memory_sample& s) {
  if (st.done) return;
  const auto taken = st.memory->take(s, st.core.members(), st.core.epoch());
  if (taken == memory_hook::outcome::journal_failed)
    execute(self, st, {finish_job{false, st.memory->failure() + "; stopping rather than training without a record"}});
  else if (taken == memory_hook::outcome::accepted && st.env.memory_predictor && !s.in_step)
    self->send(st.env.memory_predictor, s);
}

// From a rank: what a step did under its memory fit request. Journaled (every one: a resume
// replays them) and kept for a rollback in this process.
void on_memory_fit_done(shell_state& st, const msg::memory_fit_done& d) {
  if (st.done) return;
  st.env.fit_replay->record(d.fit);
  count_fit(st, !d.fits ? "unfit" : d.keyframe_cuts > 0 ? "keyframe" : d.micro_batches_split > 0 ? "split" : "unchanged");
  event_context ctx;
  ctx.step = d.fit.step;
  ctx.epoch = d.epoch;
  ctx.rank = d.fit.rank_name;
  ctx.fields = memory_fit_fields(d);
  char gb[96];
  std::snprintf(gb, sizeof gb, "forecast %.3f GB over the budget %.3f GB; ran ", d.fit.forecast_bytes / 1e9,
                d.fit.budget_bytes / 1e9);
  const auto detail = "step " + std::to_string(d.fit.step) + (d.fit.replay ? " (replayed)" : "") + ": " + gb + d.detail +
                      "; peak " + std::to_string(d.peak_bytes) + " B";
  if (st.env.journal) st.env.journal->event("memory_fit", detail, ctx);
  remember_memory_event(st, "memory_fit", detail, d.fit.step, d.fit.rank_name);
  if (st.control) st.control->on_event("memory_fit", detail);
}

// From the memory watermark predictor: journaled (the first memory_advice_journaled_max,
// then counted only; the predictor sends advice only when it is news).
void on_memory_advice(shell_state& st, const msg::memory_advice& a) {
  if (st.done) return;
  remember_memory_event(st, "memory_advice", a.rank_name + ": " + a.reason, a.step, a.rank_name);
  if (++st.memory_advice_seen > memory_advice_journaled_max) return;
  event_context ctx;
  ctx.step = a.step;
  ctx.epoch = st.core.epoch();
  ctx.rank = a.rank_name;
  ctx.fields = {{"action", a.kind == msg::advice_kind::evict ? "evict" : "reserve"},
                {"gb", a.gb},
                {"forecast_gb", a.forecast_gb},
                {"fits", a.fits},
                // what `msomni job` reports to msomni-sched: forecast + margin of the device
                {"margin_gb", st.env.memory.safety_margin_gb},
                {"device_gb", st.env.memory.device_memory_gb}};
  const auto detail = a.rank_name + ": " + a.reason;
  if (st.env.journal) st.env.journal->event("memory_advice", detail, ctx);
  if (st.control) st.control->on_event("memory_advice", detail);
}

}  // namespace msomni::orchestrator::shell
