// msomni-sched's command line: the flags, the [scheduler] file they override, and what they
// set (sched_options). main.cpp parses, then serves.
#pragma once

#include "sched_leadership.hpp"
#include "scheduler_actor.hpp"

#include "core/command_line.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace msomni::apps {

// Flags that set a [scheduler] key: checked against that key's limit when parsed, applied
// after the --config file so that they override it.
class setting_flags {
 public:
  explicit setting_flags(CLI::App& app) : app_(app) {}

  template <class T, class Limit>
  void add(const std::string& flag, T& target, Limit limit, const std::string& what) {
    std::ostringstream shown;
    shown << target;
    app_.add_option_function<T>(
            flag, [this, &target](const T& v) { defer([&target, v] { target = v; }); }, what)
        ->transform(command_line::within(limit))
        ->default_str(shown.str());
  }

  void defer(std::function<void()> set) { apply_.push_back(std::move(set)); }

  void apply() const {
    for (const auto& a : apply_) a();
  }

 private:
  CLI::App& app_;
  std::vector<std::function<void()>> apply_;
};

// Everything the command line sets.
struct sched_options {
  sched::scheduler_settings s;
  uint32_t gpus = 8, per_node = 8, per_switch = 4;
  std::string config_file, listen, info_file = "msomni-sched.info";
  std::string metrics_port = "0", metrics_host = "127.0.0.1";
  double recover_s = 10;
  sched_store_options store;
  sched_options();
};

// Declares every flag of msomni-sched on `app`; the [scheduler] key flags go through `settings`.
void add_sched_flags(CLI::App& app, sched_options& o, setting_flags& settings);

// Reads the --config file (flags then override it).
void load_config_file(const std::string& path, sched::scheduler_settings& s);

// What every instance of one service must share, as the store keeps it.
std::map<std::string, std::string> shared_settings(const sched_options& o);

}  // namespace msomni::apps
