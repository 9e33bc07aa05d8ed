// `msomni inspect --run-dir DIR [--scheduler-info FILE] [--interval S] [--once [--json]]`:
// the actor inspector console. Joins the job's control process (and/or msomni-sched), asks
// for a snapshot every interval and draws the current view; keys switch views and sort.
// --once prints one snapshot (--json: the job's inspect reply plus "scheduler") and exits.
#include "commands.hpp"
#include "inspect_curses.hpp"
#include "inspect_model.hpp"
#include "inspect_source.hpp"

#include "core/command_line.hpp"
#include "core/json_text.hpp"

#include <unistd.h>

#include <chrono>
#include <deque>
#include <iostream>

namespace msomni::cli {

namespace {

using namespace std::chrono_literals;
using inspect::snapshot;

constexpr auto join_timeout = 10s;
constexpr auto reply_timeout = 10s;
// Rates are taken over at least this long: ranks and agents push their counters once a
// second, so deltas between refreshes closer than that would jump between 0 and double.
constexpr double rate_window_s = 5;
constexpr size_t history_max = 64;

// The snapshot to take rates against: the newest at least rate_window_s older than `now`,
// else the oldest there is (null for none). Older ones than that are dropped.
const snapshot* rate_base(std::deque<snapshot>& history, const snapshot& now) {
  while (history.size() > 1 && now.time_s - history[1].time_s >= rate_window_s) history.pop_front();
  while (history.size() > history_max) history.pop_front();
  return history.empty() ? nullptr : &history.front();
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t sortable_columns(const inspect::console_state& st, const snapshot& now, const snapshot* before) {
  const auto content = inspect::build_view(st.current, now, before);
  return content.tables.empty() ? 0 : content.tables.front().columns.size();
}

// The live console until `q` (exit 0) or the job stops answering (exit 1, said on stderr
// once the terminal is back).
int run_console(inspect::inspect_source& source, snapshot now, double interval_s, std::ostream& err) {
  std::string why;
  {
    inspect::curses_screen screen;
    inspect::console_state st;
    if (!now.job.is_object()) st.current = inspect::view::scheduler;
    std::deque<snapshot> history;  // earlier snapshots, oldest first
    const snapshot* before = nullptr;
    const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(interval_s));
    for (;;) {
      screen.draw(inspect::render_screen(st, now, before, screen.width(), screen.height()));
      const auto next_fetch = std::chrono::steady_clock::now() + interval;
      for (auto left = interval; left > 0ms;
           left = std::chrono::duration_cast<std::chrono::milliseconds>(next_fetch - std::chrono::steady_clock::now())) {
        const int key = screen.next_key(left);
        if (key == inspect::curses_screen::no_key) continue;
        if (key == inspect::curses_screen::resized) {
          screen.draw(inspect::render_screen(st, now, before, screen.width(), screen.height()));
          continue;
        }
        const auto effect = inspect::on_key(st, key, sortable_columns(st, now, before));
        if (effect == inspect::key_effect::quit) return exit_ok;
        if (effect == inspect::key_effect::redraw)
          screen.draw(inspect::render_screen(st, now, before, screen.width(), screen.height()));
      }
      snapshot next;
      if (!source.fetch(next, reply_timeout, why)) break;
      next.time_s = steady_seconds();
      history.push_back(std::move(now));
      now = std::move(next);
      before = rate_base(history, now);
    }
  }
  err << "msomni inspect: " << why << "\n";
  return exit_failed;
}

}  // namespace

int run_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string run_dir, scheduler_info;
  double interval_s = 1;
  bool once = false, as_json = false;
  CLI::App app{"The actor inspector console: a running job's actors, ranks, data stages, elastic timeline, "
               "idle-window forecast and memory forecast, and msomni-sched's jobs, refreshed live.",
               "msomni inspect"};
  command_line::set_conventions(app);
  app.add_option("--run-dir", run_dir, "the job's run directory (msomni-run's --run-dir)")->type_name("DIR");
  app.add_option("--scheduler-info", scheduler_info, "msomni-sched's info file (\"ADDRESS TOKEN\"): its jobs too")
      ->type_name("FILE");
  app.add_option("--interval", interval_s, "seconds between refreshes")
      ->type_name("S")
      ->transform(command_line::within(0.1, 3600.0));
  app.add_flag("--once", once, "print one snapshot and exit (plain text, no terminal needed)");
  app.add_flag("--json", as_json, "with --once: the job's inspect reply as JSON, plus \"scheduler\"");
  std::string views = "Views (key or letter): ";
  for (size_t i = 0; i < inspect::view_count; ++i) {
    const auto v = static_cast<inspect::view>(i);
    views += (i ? ", " : "") + std::to_string(i + 1) + " " + inspect::view_letter(v) + " " + inspect::view_name(v);
  }
  app.footer(views + ". Tab: next view; o/O: sort; q: quit.");
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  if (run_dir.empty() && scheduler_info.empty())
    return command_line::refuse(app, "give --run-dir DIR, --scheduler-info FILE or both", err);
  if (as_json && !once) return command_line::refuse(app, "--json goes with --once", err);
  if (!once && (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)))
    return command_line::refuse(app, "the console needs a terminal; --once prints one snapshot for scripts", err);

  inspect::inspect_source source(run_dir, scheduler_info);
  std::string why;
  snapshot now;
  if (!source.join(join_timeout, why) || !source.fetch(now, reply_timeout, why)) {
    err << "msomni inspect: " << why << "\n";
    return exit_failed;
  }
  now.time_s = steady_seconds();
  if (!once) return run_console(source, std::move(now), interval_s, err);
  if (!as_json) {
    out << inspect::render_text(now);
    return exit_ok;
  }
  auto doc = now.job.is_object() ? now.job : inspect::json::object();
  if (now.scheduler.is_object()) doc["scheduler"] = now.scheduler;
  out << json_text(doc) << "\n";
  return exit_ok;
}

}  // namespace msomni::cli
