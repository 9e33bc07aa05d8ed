// Sorting, keys and the layout of tables and screens for `msomni inspect` (see inspect_model.hpp).
#include "inspect_model.hpp"
#include "inspect_format.hpp"

#include <algorithm>

namespace msomni::cli::inspect {

namespace {

// A text column wider than this is cut, unless it is the table's last (it gets what is left).
constexpr size_t column_width_max = 48;
constexpr size_t gap = 2;  // between columns

std::string cut(std::string s, size_t width) {
  if (s.size() > width) s.resize(width);
  return s;
}

std::string trim_right(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string pad(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return cut(s, width);
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// a < b in the column's order: numbers by value, text by text.
bool cell_less(const cell& a, const cell& b, bool numeric) {
  if (numeric || (a.number && b.number)) {
    if (a.number && b.number) return *a.number < *b.number;
    return a.number.has_value() && !b.number.has_value();
  }
  return a.text < b.text;
}

std::string view_label(view v) {
  static const char* const keys[] = {"1", "2", "3", "4", "5", "6", "7"};
  return std::string(keys[static_cast<size_t>(v)]) + " " + view_name(v);
}

}  // namespace

char view_letter(view v) {
  static const char letters[] = {'a', 'r', 'd', 'e', 'p', 's', 'm'};
  return letters[static_cast<size_t>(v)];
}

const char* view_name(view v) {
  static const char* const names[] = {"actors", "ranks", "data", "elastic", "predictor", "scheduler", "memory"};
  return names[static_cast<size_t>(v)];
}

void sort_table(table& t, const sort_order& s) {
  if (!s.column || *s.column >= t.columns.size()) return;
  const size_t c = *s.column;
  const bool numeric = t.columns[c].numeric;
  std::stable_sort(t.rows.begin(), t.rows.end(), [&](const std::vector<cell>& a, const std::vector<cell>& b) {
    // A row without the number goes last in either direction.
    if (numeric && a[c].number.has_value() != b[c].number.has_value()) return a[c].number.has_value();
    return s.descending ? cell_less(b[c], a[c], numeric) : cell_less(a[c], b[c], numeric);
  });
}

std::vector<std::string> layout_table(const table& t, size_t width, size_t max_rows, const sort_order& s) {
  const size_t n = t.columns.size();
  std::vector<std::string> names(n);
  std::vector<size_t> natural(n);
  for (size_t c = 0; c < n; ++c) {
    names[c] = t.columns[c].name;
    if (s.column == c) names[c] += s.descending ? "v" : "^";
    natural[c] = names[c].size();
    for (const auto& row : t.rows) natural[c] = std::max(natural[c], row[c].text.size());
    if (c + 1 < n) natural[c] = std::min(natural[c], std::max(column_width_max, names[c].size()));
  }
  // Columns from the left while they fit; the first always, cut to the width.
  std::vector<size_t> shown;
  size_t used = 0;
  for (size_t c = 0; c < n; ++c) {
    const size_t need = (c ? gap : 0) + natural[c];
    if (c == 0) {
      natural[0] = std::min(natural[0], width);
    } else if (used + need > width) {
      // The table's last column (a free-text detail) takes what is left when that is worth it.
      if (c + 1 == n && width > used + gap + names[c].size() + 8) natural[c] = width - used - gap;
      else break;
    }
    used += (c ? gap : 0) + natural[c];
    shown.push_back(c);
  }
  const auto line_of = [&](const auto& text_at) {
    std::string line;
    for (size_t i = 0; i < shown.size(); ++i) {
      const size_t c = shown[i];
      if (i) line += std::string(gap, ' ');
      line += pad(text_at(c), natural[c], t.columns[c].numeric);
    }
    return trim_right(cut(line, width));
  };
  std::vector<std::string> out{line_of([&](size_t c) { return names[c]; })};
  const size_t rows = t.rows.size() > max_rows ? (max_rows ? max_rows - 1 : 0) : t.rows.size();
  for (size_t r = 0; r < rows; ++r) out.push_back(line_of([&](size_t c) { return t.rows[r][c].text; }));
  if (rows < t.rows.size() && max_rows > 0)
    out.push_back(cut("... " + std::to_string(t.rows.size() - rows) + " more rows", width));
  return out;
}

key_effect on_key(console_state& st, int key, size_t columns) {
  for (size_t i = 0; i < view_count; ++i)
    if (key == '1' + static_cast<int>(i) || key == view_letter(static_cast<view>(i))) {
      st.current = static_cast<view>(i);
      return key_effect::redraw;
    }
  auto& sort = st.sort[static_cast<size_t>(st.current)];
  switch (key) {
    case '\t': st.current = static_cast<view>((static_cast<size_t>(st.current) + 1) % view_count); return key_effect::redraw;
    case 'o':
      if (columns == 0) return key_effect::none;
      sort.column = sort.column ? (*sort.column + 1) % columns : 0;
      return key_effect::redraw;
    case 'O':
      if (!sort.column) sort.column = 0;
      sort.descending = !sort.descending;
      return key_effect::redraw;
    case 'q':
    case 'Q': return key_effect::quit;
    default: return key_effect::none;
  }
}

std::string job_name(const json& job) {
  if (!job.is_object() || !job.contains("metrics") || !job["metrics"].is_object()) return "?";
  for (const auto& [name, series] : job["metrics"].items())
    for (const auto& s : series)
      if (auto j = label_of(s, "job"); !j.empty()) return j;
  return "?";
}

std::vector<std::string> render_screen(const console_state& st, const snapshot& now, const snapshot* before,
                                       size_t width, size_t height) {
  if (width < min_width || height < min_height)
    return {cut("terminal too small (" + std::to_string(width) + "x" + std::to_string(height) + ", need " +
                    std::to_string(min_width) + "x" + std::to_string(min_height) + "); q quits",
                width)};
  std::vector<std::string> out;
  const auto& job = now.job;
  if (job.is_object())
    out.push_back(cut("msomni inspect  job " + job_name(job) + "  phase " + json_text_of(job, "phase") + "  step " +
                          json_text_of(job, "step") + "/" + json_text_of(job, "total_steps") + "  world " +
                          json_text_of(job, "world") + "/" + json_text_of(job, "target"),
                      width));
  else
    out.push_back(cut("msomni inspect  scheduler", width));
  std::string keys;
  for (size_t i = 0; i < view_count; ++i) {
    const auto label = view_label(static_cast<view>(i));
    keys += static_cast<view>(i) == st.current ? "[" + label + "] " : " " + label + "  ";
  }
  out.push_back(trim_right(cut(keys + " Tab next  o sort  O reverse  q quit", width)));
  out.emplace_back();

  auto content = build_view(st.current, now, before);
  const auto& sort = st.sort[static_cast<size_t>(st.current)];
  if (!content.tables.empty()) sort_table(content.tables.front(), sort);
  for (const auto& line : content.lines) {
    if (out.size() >= height) return out;
    out.push_back(trim_right(cut(line, width)));
  }
  for (size_t i = 0; i < content.tables.size(); ++i) {
    // Each later table keeps at least a blank line, its title, header and one row.
    const size_t later = 4 * (content.tables.size() - i - 1);
    if (out.size() + 3 > height) break;
    out.push_back(content.tables[i].title + ":");
    const size_t room = height - out.size() - 1;  // the header takes one line
    const size_t rows = room > later ? room - later : 1;
    for (auto& line : layout_table(content.tables[i], width, rows, i == 0 ? sort : sort_order{}))
      out.push_back(std::move(line));
    if (out.size() < height && i + 1 < content.tables.size()) out.emplace_back();
  }
  if (out.size() > height) out.resize(height);
  return out;
}

std::string render_text(const snapshot& now) {
  std::string text;
  for (size_t i = 0; i < view_count; ++i) {
    const auto v = static_cast<view>(i);
    if (v == view::scheduler ? !now.scheduler.is_object() : !now.job.is_object()) continue;
    text += (text.empty() ? "" : "\n") + std::string("== ") + view_name(v) + " ==\n";
    const auto content = build_view(v, now, nullptr);
    for (const auto& line : content.lines) text += line + "\n";
    for (const auto& t : content.tables) {
      text += t.title + ":\n";
      for (const auto& line : layout_table(t, 100000, t.rows.size())) text += line + "\n";
    }
  }
  return text;
}

}  // namespace msomni::cli::inspect
