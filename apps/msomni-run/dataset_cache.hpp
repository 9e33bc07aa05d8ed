// Renders the generated:// datasets a job names that are not in the cache yet (see
// runtime/config/generated_datasets.hpp), before anything else starts. Says what it does on
// `log`. Throws std::runtime_error when the generator is missing or fails; a half-written
// dataset is never left where a job would read it (rendered aside, then renamed).
#pragma once

#include "config/job_config.hpp"

#include <iosfwd>

namespace msomni::apps {

void ensure_generated_datasets(const config::job_config& cfg, std::ostream& log);

}  // namespace msomni::apps
