// The process-wide remote io settings (the job config's io.*, filled from the AWS_*
// environment) and which uris are remote (see remote_io.hpp).
#include "remote_io.hpp"

#include "remote_text.hpp"

#include "config/config_loader.hpp"

#include <mutex>

namespace msomni::data {
namespace {

std::mutex settings_mutex;
remote_io_settings settings_value;

}  // namespace

void set_remote_io(const remote_io_settings& s) {
  std::lock_guard lock(settings_mutex);
  settings_value = s;
}

remote_io_settings remote_io() {
  using remote_text::env_or;
  remote_io_settings s;
  {
    std::lock_guard lock(settings_mutex);
    s = settings_value;
  }
  if (s.s3_endpoint.empty()) s.s3_endpoint = env_or("AWS_ENDPOINT_URL_S3", env_or("AWS_ENDPOINT_URL", ""));
  if (s.s3_region.empty()) s.s3_region = env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", "us-east-1"));
  if (s.s3_endpoint.empty()) s.s3_endpoint = "https://s3." + s.s3_region + ".amazonaws.com";
  while (!s.s3_endpoint.empty() && s.s3_endpoint.back() == '/') s.s3_endpoint.pop_back();
  return s;
}

bool is_remote_uri(const std::string& uri) { return config::is_remote_source(uri); }

std::string remote_uri_problem(const std::string& uri) { return config::remote_source_problem(uri); }

}  // namespace msomni::data
