// The schema reader: TOML document -> job_config, with located errors in the context.
#pragma once

#include "config/config_reader.hpp"
#include "config/job_config.hpp"

namespace msomni::config {

void read_schema(const toml::table& root, reader_context& ctx, job_config& out);

// Why `name` is not one plain path component (letters, digits, '-', '_', '.'; not starting
// with '.' or '-'; 1..128 characters), or "" when it is. Names that become directories
// (job.name, msomni job --id) must pass it.
std::string plain_name_problem(const std::string& name);

// A scheduler service's file (msomni-sched --config): only a [scheduler] table.
void read_scheduler_schema(const toml::table& root, reader_context& ctx, scheduler_section& out);

}  // namespace msomni::config
