// choose_device and the checks built on it (see device_choice.hpp).
#include "config/device_choice.hpp"

#include "config/config_loader.hpp"

#include <algorithm>
#include <charconv>

namespace msomni::config {

namespace {

// "3,1,7" -> {3, 1, 7}; nullopt for anything else (blanks around ids are allowed).
std::optional<std::vector<int64_t>> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size() || v < 0) return std::nullopt;
    ids.push_back(v);
    pos = comma + 1;
  }
  return ids;
}

}  // namespace

std::optional<std::vector<int>> usable_gpus(const node_gpu_facts& f, std::string& why) {
  if (!f.cuda_compiled) {
    why = f.probe_status.empty() ? "this build has no CUDA" : f.probe_status;
    return std::nullopt;
  }
  const int count = static_cast<int>(f.devices.size());
  if (count == 0) {
    why = f.probe_status.empty() || f.probe_status == "ok" ? "the CUDA runtime shows no device" : f.probe_status;
    if (f.cuda_visible_devices) why += " (CUDA_VISIBLE_DEVICES=\"" + *f.cuda_visible_devices + "\")";
    return std::nullopt;
  }
  std::vector<int> all(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) all[static_cast<size_t>(i)] = i;
  if (f.cuda_visible_devices || !f.job_gpus) return all;
  if (f.job_gpus->find_first_not_of(' ') == std::string::npos) {
    why = "MSOMNI_JOB_GPUS is empty: the scheduler gave this job no GPU";
    return std::nullopt;
  }
  const auto ids = parse_ids(*f.job_gpus);
  if (!ids) {
    why = "MSOMNI_JOB_GPUS=\"" + *f.job_gpus + "\" is not a comma-separated list of GPU ids";
    return std::nullopt;
  }
  std::vector<int> out;
  for (const int64_t id : *ids) {
    const int local = static_cast<int>(id % count);
    if (std::find(out.begin(), out.end(), local) == out.end()) out.push_back(local);
  }
  return out;
}

device_choice choose_device(const std::string& setting, const node_gpu_facts& f, int64_t local_index) {
  device_choice c;
  if (setting == "cpu") return c;
  std::string why;
  const auto gpus = usable_gpus(f, why);
  if (gpus && local_index >= 0 && local_index < static_cast<int64_t>(gpus->size())) {
    c.cuda = true;
    c.gpu = (*gpus)[static_cast<size_t>(local_index)];
    c.reason = "local rank " + std::to_string(local_index) + " of this node binds GPU " + std::to_string(c.gpu) +
               (f.job_gpus && !f.cuda_visible_devices ? " (from MSOMNI_JOB_GPUS=\"" + *f.job_gpus + "\")" : "");
    return c;
  }
  if (gpus)
    why = "this rank is local rank " + std::to_string(local_index) + " of its node, which has " +
          std::to_string(gpus->size()) + " usable GPU" + (gpus->size() == 1 ? "" : "s") +
          " (one GPU per rank; NCCL cannot share one between ranks)";
  c.refused = setting == "cuda";
  // The probe's own status may already say so.
  c.reason = why.rfind("no usable GPU", 0) == 0 ? why : "no usable GPU: " + why;
  return c;
}

std::vector<config_error> check_devices(const job_config& cfg, const node_gpu_facts& local) {
  if (cfg.training.device != "cuda" || !cfg.cluster.nodes.empty()) return {};
  // Ordinals are bound in local-index order, so the last slot is the first to go without one.
  const auto last = choose_device("cuda", local, cfg.elasticity.max_replicas - 1);
  if (!last.refused) return {};
  return {located(cfg, "training.device",
                  "\"cuda\" needs a GPU for each of the " + std::to_string(cfg.elasticity.max_replicas) +
                      " ranks this node may run (elasticity.max_replicas), but " + last.reason +
                      "; use \"auto\" or \"cpu\" to train on the CPU")};
}

std::string describe_local_compute(const job_config& cfg, const node_gpu_facts& local, int64_t local_index,
                                   const std::string& cpu_text) {
  const auto c = choose_device(cfg.training.device, local, local_index);
  if (c.cuda)
    return "cuda, GPU " + std::to_string(c.gpu) + " (" + local.devices[static_cast<size_t>(c.gpu)] + ")";
  if (cfg.training.device == "cpu") return "cpu, " + cpu_text;
  return "cpu, " + cpu_text + " [training.device=" + cfg.training.device + ": " + c.reason + "]";
}

}  // namespace msomni::config
