// msomni-run's pre-flight: health.preflight's level of the checks, the report on `err`, and
// the exit code: 0 to go on (warnings allowed), preflight_failed_exit when a check failed.
#pragma once

#include <nlohmann/json.hpp>

#include "config/job_config.hpp"

#include <filesystem>
#include <iosfwd>

namespace msomni::health {

inline constexpr int preflight_failed_exit = 3;

// `report`, when given, receives the report as JSON (docs/health_check.md; null when the
// pre-flight is off), for msomni-run to keep in the run directory once it has claimed it.
int run_preflight(const config::job_config& cfg, const std::filesystem::path& checkpoint_dir, std::ostream& err,
                  nlohmann::ordered_json* report = nullptr);

}  // namespace msomni::health
