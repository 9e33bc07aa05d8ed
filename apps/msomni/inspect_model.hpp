// The pure part of `msomni inspect`: from the job's "inspect" reply (and the scheduler's
// status) to tables and screen lines, with no terminal and no clock. A snapshot is the JSON
// as it came plus the time it was taken; rates (messages/s, samples/s) are the deltas of
// counters between two snapshots over the time between them. Views:
//   actors    process, actor, mailbox depth, msgs/s, mean handling time, busy/idle
//   ranks     the status's ranks with their step time, loss, data wait, tokens/s, memory
//   data      stage fill bars per rank, samples/s and downgrades per modality, bad samples
//   elastic   epoch, phase, world/target and the newest journal events
//   predictor the job's next idle windows and the forecast's confidence
//   scheduler msomni-sched's queue and jobs (with --scheduler-info)
//   memory    per rank: compute memory in use, the step's peak, the budget, the memory
//             predictor's forecast and the headroom; its advice/fit/sample counts and events
// Every view is built from whatever families are present: a family nobody exports yet
// gives no rows, never an error. Layout drops columns from the right and cuts rows to fit.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace msomni::cli::inspect {

// Ordered: `--once --json` prints the reply with its keys in the order the job wrote them.
using json = nlohmann::ordered_json;

enum class view : unsigned char { actors, ranks, data, elastic, predictor, scheduler, memory };
inline constexpr size_t view_count = 7;
const char* view_name(view v);
// The letter that shows a view besides its number (1..7): 'a' actors, 'r' ranks, ...
char view_letter(view v);

// One value of a table: the text shown, and what it sorts by (numbers numerically, the rest
// by text; a row without the number ("-") goes last).
struct cell {
  std::string text;
  std::optional<double> number;
};
struct column {
  std::string name;
  bool numeric = false;  // right-aligned
};
struct table {
  std::string title;
  std::vector<column> columns;
  std::vector<std::vector<cell>> rows;  // each as long as columns
};

// What a view shows: lines of text, then its tables (the first is the one `o` sorts).
struct view_content {
  std::vector<std::string> lines;
  std::vector<table> tables;
};

// The job's "inspect" reply (null when only the scheduler is watched), the scheduler's status
// as `msomni sched-status --json` prints it (null without --scheduler-info), and when
// (seconds on any steady clock) they were taken.
struct snapshot {
  json job;
  json scheduler;
  double time_s = 0;
};

// `before`: the previous snapshot, for rates; null for the first (rates show "-").
view_content build_view(view v, const snapshot& now, const snapshot* before);

// Sorting the first table of a view: nullopt column = the order the view built.
struct sort_order {
  std::optional<size_t> column;
  bool descending = false;
};
void sort_table(table& t, const sort_order& s);

// A table as at most `width` columns of text: a header line, then up to `max_rows` lines
// (the last says how many rows were left out when some were). Columns that do not fit are
// dropped from the right; the first is cut to the width when even it does not fit. The
// sorted column's name carries '^' (ascending) or 'v'.
std::vector<std::string> layout_table(const table& t, size_t width, size_t max_rows, const sort_order& s = {});

// The console's state between keys.
struct console_state {
  view current = view::actors;
  std::array<sort_order, view_count> sort{};
};

enum class key_effect { none, redraw, quit };
// 1-7 or a/r/d/e/p/s/m pick a view, Tab the next one, o the next sort column of the current
// view's first table (which has `columns` columns), O reverses it, q quits.
key_effect on_key(console_state& st, int key, size_t columns);

// Below this the console shows only a "terminal too small" line.
inline constexpr size_t min_width = 40, min_height = 10;

// The whole screen: the header (job, phase, step, world), the key help, then the current
// view; exactly `height` lines or fewer, none wider than `width`.
std::vector<std::string> render_screen(const console_state& st, const snapshot& now, const snapshot* before,
                                       size_t width, size_t height);

// `msomni inspect --once`: every view (the scheduler's only when it is watched), as plain text.
std::string render_text(const snapshot& now);

// The job's name as its series carry it ("job" label), "?" when none does.
std::string job_name(const json& job);

}  // namespace msomni::cli::inspect
