// lead_scheduler (see sched_leadership.hpp).
#include "sched_leadership.hpp"

#include "core/stop_signal.hpp"
#include "core/store_url.hpp"

#include <filesystem>
#include <iostream>

namespace msomni::apps {

std::variant<std::unique_ptr<sched_leader>, int> lead_scheduler(const sched_store_options& o) {
  std::string why;
  control::leadership_options lo;
  lo.endpoints = parse_store_url(o.store, why);  // checked by the flag's validator
  lo.job = "sched-" + o.name;
  lo.fingerprint = control::config_fingerprint(o.settings);
  std::error_code ec;
  lo.run_dir = std::filesystem::absolute(o.info_file, ec).string();
  lo.ttl = std::chrono::seconds(o.lease_ttl_s);
  auto leader = std::make_unique<sched_leader>();
  leader->leadership = std::make_unique<control::control_leadership>(lo);
  stop_signal::install();
  const auto e = leader->leadership->campaign(stop_signal::flag(), [](const std::string& line) {
    std::cout << "msomni-sched: " << line << std::endl;
  });
  if (!e.elected) {
    if (!e.problem.empty()) {
      std::cerr << "msomni-sched: " << e.problem << "; nothing was started.\n";
      return 1;
    }
    std::cout << "msomni-sched: stopped while standing by" << std::endl;
    return 0;
  }
  if (e.what == control::takeover::other_config) {
    std::cerr << "msomni-sched: the service \"" << o.name << "\" in the store runs with other settings (fingerprint "
              << e.previous.fingerprint << ", these " << lo.fingerprint
              << "); every instance of a service needs the same topology and policy flags; nothing was started.\n";
    return 2;
  }
  // A clean stop of a leader keeps the service's phase running, so a standby takes over
  // from a stopped leader as from a dead one.
  leader->took_over = e.what != control::takeover::start;
  leader->previous = e.previous.leader;
  leader->term = e.term;
  auto* flag = &leader->deposed;
  leader->leadership->serve([flag](const std::string& why) {
    std::cerr << "msomni-sched: deposed: " << why << "; stopping (another instance leads the service)" << std::endl;
    flag->store(true);
    stop_signal::flag().store(true);
  });
  std::cout << "msomni-sched: leading the service \"" << o.name << "\" in " << o.store << " (term " << e.term << ")"
            << (leader->took_over ? ", taking over from " + e.previous.leader : std::string()) << std::endl;
  return leader;
}

}  // namespace msomni::apps
