// msomni-run's pre-flight (health_preflight.hpp).
#include "health_preflight.hpp"

#include "health_probes.hpp"
#include "health_report.hpp"

#include <ostream>

namespace msomni::health {

int run_preflight(const config::job_config& cfg, const std::filesystem::path& checkpoint_dir, std::ostream& err) {
  if (cfg.health.preflight == "off") return 0;
  health_options o;
  o.level = parse_level(cfg.health.preflight).value_or(health_level::quick);
  o.checkpoint_dir = checkpoint_dir;
  const auto report = run_health_checks(cfg, o);
  err << render_table(report);
  if (verdict(report) != check_status::fail) return 0;
  err << "msomni-run: pre-flight check failed; nothing was started (health.preflight = \"off\" skips it)\n";
  return preflight_failed_exit;
}

}  // namespace msomni::health
