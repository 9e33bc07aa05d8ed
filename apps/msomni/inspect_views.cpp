// build_view (see inspect_model.hpp): each view's rows from the families of the reply.
#include "inspect_model.hpp"
#include "inspect_format.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace msomni::cli::inspect {

namespace {

using key2 = std::pair<std::string, std::string>;

// Rows per (process, label value) of one family, the values summed over its other labels.
std::map<key2, double> sums_by(const json& job, const char* family_name, const char* label_name) {
  std::map<key2, double> out;
  for (const auto& row : family(job, family_name))
    if (const auto v = value_of(row)) out[{process_of(row), label_of(row, label_name)}] += *v;
  return out;
}

struct histogram_sum {
  double count = 0, sum = 0;
};
std::map<key2, histogram_sum> histograms_by(const json& job, const char* family_name, const char* label_name) {
  std::map<key2, histogram_sum> out;
  for (const auto& row : family(job, family_name)) {
    auto& h = out[{process_of(row), label_of(row, label_name)}];
    h.count += row.value("count", 0.0);
    h.sum += get_number(row, "sum").value_or(0.0);
  }
  return out;
}

// The change per second of a counter between two snapshots; nullopt without a previous one
// or when the counter went back (a process that restarted counts from zero).
template <class Map>
std::optional<double> rate(const Map& now, const Map* before, const typename Map::key_type& k, double dt_s) {
  const auto n = now.find(k);
  if (!before || dt_s <= 0 || n == now.end()) return std::nullopt;
  const auto b = before->find(k);
  if (b == before->end() || n->second < b->second) return std::nullopt;
  return (n->second - b->second) / dt_s;
}

double seconds_between(const snapshot& now, const snapshot* before) { return before ? now.time_s - before->time_s : 0; }

view_content actors_view(const snapshot& now, const snapshot* before) {
  const auto depth = sums_by(now.job, "msomni_actor_mailbox_depth", "actor");
  const auto messages = sums_by(now.job, "msomni_actor_messages_total", "actor");
  const auto handling = histograms_by(now.job, "msomni_actor_handling_seconds", "actor");
  std::optional<std::map<key2, double>> messages_before;
  if (before) messages_before = sums_by(before->job, "msomni_actor_messages_total", "actor");
  std::set<key2> actors;
  for (const auto* m : {&depth, &messages})
    for (const auto& [k, v] : *m) actors.insert(k);
  for (const auto& [k, v] : handling) actors.insert(k);

  table t{"actors",
          {{"PROCESS"}, {"ACTOR"}, {"MAILBOX", true}, {"MSGS/S", true}, {"MESSAGES", true}, {"MEAN_MS", true}, {"STATE"}},
          {}};
  size_t busy = 0;
  for (const auto& k : actors) {
    const auto d = find_value(depth, k);
    const auto h = handling.find(k);
    std::optional<double> mean_ms;
    if (h != handling.end() && h->second.count > 0) mean_ms = h->second.sum / h->second.count * 1e3;
    const bool is_busy = d.value_or(0) > 0;
    busy += is_busy;
    t.rows.push_back({text_cell(k.first), text_cell(k.second), number_cell(d, 0),
                      number_cell(rate(messages, messages_before ? &*messages_before : nullptr, k,
                                       seconds_between(now, before)), 1),
                      number_cell(find_value(messages, k), 0), number_cell(mean_ms, 3),
                      text_cell(is_busy ? "busy" : "idle")});
  }
  view_content v;
  v.lines.push_back(std::to_string(actors.size()) + " actors, " + std::to_string(busy) + " busy (messages waiting)");
  v.tables.push_back(std::move(t));
  return v;
}

// One value per rank of a family without other labels (the sum when there are several).
std::map<std::string, double> per_rank(const json& job, const char* family_name) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : sums_by(job, family_name, "")) out[k.first] += v;
  return out;
}

std::optional<double> scaled(std::optional<double> v, double by) { return v ? std::optional<double>(*v * by) : std::nullopt; }

view_content ranks_view(const snapshot& now, const snapshot* before) {
  const auto& job = now.job;
  const auto loss = per_rank(job, "msomni_rank_loss");
  const auto wait = per_rank(job, "msomni_rank_data_wait_ratio");
  const auto tokens = per_rank(job, "msomni_rank_own_tokens_per_second");  // the rank's own, not the job's
  const auto compute = per_rank(job, "msomni_rank_compute_seconds");
  const auto imbalance = per_rank(job, "msomni_rank_step_imbalance_ratio");
  const auto cost_error = per_rank(job, "msomni_rank_cost_model_error_ratio");
  const auto memory = sums_by(job, "msomni_rank_memory_bytes", "kind");
  const auto steps = histograms_by(job, "msomni_rank_step_seconds", "");
  std::optional<std::map<key2, histogram_sum>> steps_before;
  if (before) steps_before = histograms_by(before->job, "msomni_rank_step_seconds", "");
  std::map<std::string, std::string> device;
  for (const auto& row : family(job, "msomni_rank_threads")) {
    auto& d = device[process_of(row)];
    d += (d.empty() ? "" : ",") + label_of(row, "device");
  }
  bool any_device_memory = false;
  for (const auto& [k, v] : memory) any_device_memory |= k.second == "device";

  table t{"ranks",
          {{"RANK"}, {"NODE"}, {"PID", true}, {"STATE"}, {"DEVICE"}, {"STEP", true}, {"STEP_MS", true},
           {"COMPUTE_MS", true}, {"IMBAL", true}, {"COST_ERR%", true}, {"LOSS", true}, {"WAIT%", true},
           {"TOKENS/S", true}, {"MEMORY", true}},
          {}};
  if (any_device_memory) t.columns.push_back({"DEV_MEM", true});
  const json none = json::array();
  for (const auto& r : job.is_object() && job.contains("ranks") ? job["ranks"] : none) {
    const auto name = r.value("name", std::string("?"));
    // The step time over the last interval (delta of the histogram), else since the start.
    std::optional<double> step_ms;
    if (const auto h = steps.find({name, ""}); h != steps.end()) {
      auto count = h->second.count, sum = h->second.sum;
      if (steps_before)
        if (const auto b = steps_before->find({name, ""}); b != steps_before->end() && count > b->second.count) {
          count -= b->second.count;
          sum -= b->second.sum;
        }
      if (count > 0) step_ms = sum / count * 1e3;
    }
    const auto w = find_value(wait, name);
    std::vector<cell> row{text_cell(name),
                          text_cell(r.value("node", std::string())),
                          number_cell(json_number(r, "pid"), 0),
                          text_cell(r.value("state", std::string())),
                          text_cell(device.count(name) ? device[name] : "-"),
                          number_cell(json_number(r, "step"), 0),
                          number_cell(step_ms, 1),
                          number_cell(scaled(find_value(compute, name), 1e3), 1),
                          number_cell(find_value(imbalance, name), 2),
                          number_cell(scaled(find_value(cost_error, name), 100), 1),
                          number_cell(find_value(loss, name), 4),
                          number_cell(w ? std::optional<double>(*w * 100) : std::nullopt, 1),
                          number_cell(find_value(tokens, name), 0),
                          bytes_cell(find_value(memory, key2{name, "host"}))};
    if (any_device_memory) row.push_back(bytes_cell(find_value(memory, key2{name, "device"})));
    t.rows.push_back(std::move(row));
  }
  view_content v;
  v.lines.push_back(std::to_string(t.rows.size()) + " ranks (world " + json_text_of(job, "world") + ", target " +
                    json_text_of(job, "target") + ")");
  v.tables.push_back(std::move(t));
  return v;
}

}  // namespace

view_content data_view(const snapshot& now, const snapshot* before);
view_content elastic_view(const snapshot& now);
view_content predictor_view(const snapshot& now);
view_content scheduler_view(const snapshot& now);
view_content memory_view(const snapshot& now);

view_content build_view(view v, const snapshot& now, const snapshot* before) {
  if (v != view::scheduler && !now.job.is_object()) return {{"no job watched (give --run-dir DIR)"}, {}};
  switch (v) {
    case view::actors: return actors_view(now, before);
    case view::ranks: return ranks_view(now, before);
    case view::data: return data_view(now, before);
    case view::elastic: return elastic_view(now);
    case view::predictor: return predictor_view(now);
    case view::scheduler: return scheduler_view(now);
    case view::memory: return memory_view(now);
  }
  return {};
}

// The data view: a table of stages (fill bars) and one of flows per modality.
view_content data_view(const snapshot& now, const snapshot* before) {
  const auto& job = now.job;
  const auto fill = sums_by(job, "msomni_data_stage_fill", "stage");
  const auto capacity = sums_by(job, "msomni_data_stage_capacity", "stage");
  const auto credits = sums_by(job, "msomni_data_credits_outstanding", "stage");
  const auto samples = sums_by(job, "msomni_data_samples_total", "modality");
  const auto decode_s = sums_by(job, "msomni_data_decode_seconds_total", "modality");
  const auto downgrades = sums_by(job, "msomni_data_downgrades_total", "modality");
  std::optional<std::map<key2, double>> samples_before;
  if (before) samples_before = sums_by(before->job, "msomni_data_samples_total", "modality");

  // The pipeline's order first (reader, decoder, tensor), any other stage after them.
  const auto stage_rank = [](const std::string& s) { return s == "reader" ? 0 : s == "decoder" ? 1 : s == "tensor" ? 2 : 3; };
  std::vector<key2> stages;
  for (const auto* m : {&fill, &capacity, &credits})
    for (const auto& [k, v] : *m)
      if (std::find(stages.begin(), stages.end(), k) == stages.end()) stages.push_back(k);
  std::stable_sort(stages.begin(), stages.end(), [&](const key2& a, const key2& b) {
    return std::make_tuple(a.first, stage_rank(a.second), a.second) < std::make_tuple(b.first, stage_rank(b.second), b.second);
  });
  table flows{"flows", {{"RANK"}, {"MODALITY"}, {"SAMPLES/S", true}, {"SAMPLES", true}, {"DECODE_MS", true}, {"DOWNGRADES", true}}, {}};
  std::set<key2> modalities;
  for (const auto* m : {&samples, &downgrades})
    for (const auto& [k, v] : *m) modalities.insert(k);
  double downgraded = 0;
  for (const auto& k : modalities) {
    const auto n = find_value(samples, k);
    const auto d = find_value(decode_s, k);
    std::optional<double> mean_ms;
    if (n && d && *n > 0) mean_ms = *d / *n * 1e3;
    downgraded += find_value(downgrades, k).value_or(0);
    flows.rows.push_back({text_cell(k.first), text_cell(k.second),
                          number_cell(rate(samples, samples_before ? &*samples_before : nullptr, k,
                                           seconds_between(now, before)), 1),
                          number_cell(n, 0), number_cell(mean_ms, 3),
                          number_cell(find_value(downgrades, k).value_or(0), 0)});
  }
  table stage_table{"stages", {{"RANK"}, {"STAGE"}, {"FILL"}, {"ITEMS", true}, {"CAPACITY", true}, {"CREDITS", true}}, {}};
  for (const auto& k : stages) {
    const auto f = find_value(fill, k), c = find_value(capacity, k);
    stage_table.rows.push_back({text_cell(k.first), text_cell(k.second), fill_bar(f, c, 20), number_cell(f, 0),
                                number_cell(c, 0), number_cell(find_value(credits, k), 0)});
  }
  std::map<std::string, std::map<std::string, double>> bad;  // rank -> reason -> count
  double bad_total = 0;
  for (const auto& [k, v] : sums_by(job, "msomni_data_bad_samples_total", "reason"))
    if (v > 0) {
      bad[k.first][k.second] += v;
      bad_total += v;
    }
  view_content v;
  v.lines.push_back("downgrades " + plain_number(downgraded) + ", bad samples " + plain_number(bad_total));
  for (const auto& [rank, reasons] : bad) {
    std::string line = "  bad samples of " + rank + ":";
    for (const auto& [reason, n] : reasons) line += " " + reason + " " + plain_number(n);
    v.lines.push_back(line);
  }
  v.tables.push_back(std::move(flows));
  v.tables.push_back(std::move(stage_table));
  return v;
}

}  // namespace msomni::cli::inspect
