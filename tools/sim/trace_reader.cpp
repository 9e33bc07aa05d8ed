// Trace CSV parsing: header-driven column lookup, so column order does not matter.
#include "trace_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace msomni::sim {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') cur.push_back(ch);
  }
  out.push_back(cur);
  return out;
}

struct csv_file {
  std::ifstream in;
  std::string path;
  std::map<std::string, size_t> columns;
  uint64_t line_no = 1;

  explicit csv_file(const std::string& p) : in(p), path(p) {
    if (!in) throw std::runtime_error(p + ": cannot open");
    std::string header;
    if (!std::getline(in, header)) throw std::runtime_error(p + ":1: empty file");
    auto names = split_csv(header);
    for (size_t i = 0; i < names.size(); ++i) columns[names[i]] = i;
  }
  bool has(const std::string& c) const { return columns.count(c) != 0; }
  std::optional<size_t> col(const std::string& c) const {
    auto it = columns.find(c);
    if (it == columns.end()) return std::nullopt;
    return it->second;
  }
  std::string where(size_t col) const {
    return path + ":" + std::to_string(line_no) + ":" + std::to_string(col + 1);
  }
};

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  std::istringstream is(s);
  is >> out;
  return !is.fail() && std::isfinite(out);
}

}  // namespace

std::optional<sched::job_class> class_of_qos(const std::string& qos) {
  if (qos == "LS" || qos == "Guaranteed") return sched::job_class::critical;
  if (qos == "Burstable") return sched::job_class::regular;
  if (qos == "BE") return sched::job_class::best_effort;
  return std::nullopt;
}

trace read_trace(const std::string& path) {
  csv_file f(path);
  trace t;
  std::optional<size_t> c_id = f.col("job_id"), c_sub, c_dur, c_gpu,
                        c_qos = f.col(columns::alibaba[4]);  // read in either format when present
  if (f.has(columns::itp[1])) {
    t.format = "itp";
    c_sub = f.col(columns::itp[1]);
    c_dur = f.col(columns::itp[2]);
    c_gpu = f.col(columns::itp[3]);
  } else if (f.has(columns::alibaba[1])) {
    t.format = "alibaba-v2023";
    c_sub = f.col(columns::alibaba[1]);
    c_dur = f.col(columns::alibaba[2]);
    c_gpu = f.col(columns::alibaba[3]);
  }
  if (!c_id || !c_sub || !c_dur || !c_gpu)
    throw std::runtime_error(path +
                             ":1: unknown header; expected ITP columns (job_id, submission_time, "
                             "duration, num_gpu) or Alibaba v2023 columns (job_id, submit_time_s, "
                             "duration_s, num_gpus[, qos])");
  std::string line;
  while (std::getline(f.in, line)) {
    ++f.line_no;
    if (line.empty()) continue;
    ++t.rows;
    auto cells = split_csv(line);
    size_t need = std::max({*c_id, *c_sub, *c_dur, *c_gpu});
    if (cells.size() <= need) throw std::runtime_error(f.where(cells.size()) + ": too few columns");
    trace_job j;
    j.id = cells[*c_id];
    double gpus = 0;
    if (!parse_double(cells[*c_gpu], gpus) || gpus < 0)
      throw std::runtime_error(f.where(*c_gpu) + ": bad GPU count '" + cells[*c_gpu] + "'");
    if (gpus == 0) {
      ++t.skipped_no_gpu;
      continue;
    }
    if (!parse_double(cells[*c_sub], j.submit_s) || !parse_double(cells[*c_dur], j.duration_s) ||
        j.duration_s <= 0) {
      ++t.skipped_bad;  // e.g. Alibaba pods that were never scheduled have no duration
      continue;
    }
    j.gpus = static_cast<uint32_t>(std::ceil(gpus));
    if (c_qos && *c_qos < cells.size()) j.klass = class_of_qos(cells[*c_qos]);
    t.jobs.push_back(std::move(j));
  }
  std::stable_sort(t.jobs.begin(), t.jobs.end(),
                   [](const trace_job& a, const trace_job& b) { return a.submit_s < b.submit_s; });
  return t;
}

std::vector<uint32_t> read_node_list(const std::string& path) {
  csv_file f(path);
  auto c_gpu = f.col(columns::node_list[0]);
  if (!c_gpu) throw std::runtime_error(path + ":1: node list needs a 'gpu' column");
  std::vector<uint32_t> nodes;
  std::string line;
  while (std::getline(f.in, line)) {
    ++f.line_no;
    if (line.empty()) continue;
    auto cells = split_csv(line);
    double g = 0;
    if (*c_gpu >= cells.size() || !parse_double(cells[*c_gpu], g) || g < 0)
      throw std::runtime_error(f.where(*c_gpu) + ": bad gpu count");
    if (g > 0) nodes.push_back(static_cast<uint32_t>(g));
  }
  return nodes;
}

}  // namespace msomni::sim
