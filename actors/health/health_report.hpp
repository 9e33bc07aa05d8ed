// The pre-flight report for people (a table) and for programs (one JSON object, the form
// docs/health_check.md documents).
#pragma once

#include "health_core.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace msomni::health {

nlohmann::ordered_json to_json(const health_report& r);
std::string render_table(const health_report& r);

}  // namespace msomni::health
