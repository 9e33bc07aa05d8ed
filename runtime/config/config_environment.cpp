// Semantic checks of a loaded config against this machine: paths exist, ports are free,
// directories are writable. Each error names the key that caused it.
#include "config/config_loader.hpp"
#include "config/generated_datasets.hpp"
#include "core/shard_pattern.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace msomni::config {

namespace fs = std::filesystem;

config_error located(const job_config& cfg, const std::string& key, std::string reason) {
  config_error e{cfg.source_path, 1, 1, key, std::move(reason)};
  if (auto it = cfg.key_locations.find(key); it != cfg.key_locations.end()) {
    // "FILE:LINE:COL" -> parts (FILE may itself contain ':').
    const auto& s = it->second;
    const auto c2 = s.rfind(':');
    const auto c1 = s.rfind(':', c2 - 1);
    e.file = s.substr(0, c1);
    e.line = static_cast<uint32_t>(std::stoul(s.substr(c1 + 1, c2 - c1 - 1)));
    e.column = static_cast<uint32_t>(std::stoul(s.substr(c2 + 1)));
  }
  return e;
}

namespace {

fs::path config_dir(const job_config& cfg) {
  return fs::path(cfg.source_path).parent_path();
}

std::string port_problem(const std::string& host, int64_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::string("socket(): ") + std::strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    return "control_host \"" + host + "\" is not an IPv4 address";
  }
  std::string problem;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    problem = "port " + std::to_string(port) + " on " + host + " is not free: " + std::strerror(errno);
  ::close(fd);
  return problem;
}

// Why a resolved local data path names no shard file: it does not exist, or it is a pattern
// (the same expansion the ranks' storage makes of the same path) that is malformed or
// matches nothing. "" when it names something.
std::string data_path_problem(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return "";
  if (!shard_pattern::is_pattern(path.string())) return "path " + path.string() + " does not exist";
  try {
    if (shard_pattern::match_files(path.string()).empty()) return "pattern " + path.string() + " matches no shard";
  } catch (const std::invalid_argument& e) {
    return std::string("malformed pattern: ") + e.what();
  }
  return "";
}

}  // namespace

bool is_remote_source(const std::string& uri) {
  return uri.rfind("s3://", 0) == 0 || uri.rfind("http://", 0) == 0 || uri.rfind("https://", 0) == 0;
}

std::string remote_source_problem(const std::string& uri) {
  if (!is_remote_source(uri)) return "";
  const auto rest = uri.substr(uri.find("://") + 3);
  const std::string host = rest.substr(0, rest.find('/'));
  const bool s3 = uri.rfind("s3://", 0) == 0;
  if (host.empty()) return s3 ? "\"" + uri + "\" names no bucket (s3://bucket/prefix)" : "\"" + uri + "\" names no host";
  if (uri.find_first_of(" \t\r\n") != std::string::npos) return "\"" + uri + "\" holds white space";
  if (host.find('@') != std::string::npos)
    return "\"" + uri + "\" carries credentials; use io.s3_credentials_file or the AWS_* environment";
  if (s3 && host.find(':') != std::string::npos)
    return "\"" + uri + "\": a bucket name holds no ':' (name the store with io.s3_endpoint)";
  return "";
}

fs::path resolve_data_path(const job_config& cfg, const std::string& uri) {
  if (uri.rfind("generated://", 0) == 0) return generated_path(uri);
  if (is_remote_source(uri)) return fs::path(uri);  // s3:// and http(s):// are taken as written
  std::string p = uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri;
  fs::path path(p);
  return path.is_absolute() ? path : config_dir(cfg) / path;
}

std::vector<config_error> check_environment(const job_config& cfg, const source_check& usable_source) {
  std::vector<config_error> errors;
  for (size_t i = 0; i < cfg.data.sources.size(); ++i) {
    const auto& src = cfg.data.sources[i];
    const auto key = "data.sources[" + std::to_string(i) + "].uri";
    if (src.uri.rfind("synthetic://", 0) == 0) {
      const auto kind = src.uri.substr(12);
      if (kind != "shapes" && kind != "text")
        errors.push_back(located(cfg, key, "unknown synthetic source \"" + kind + "\" (shapes, text)"));
      continue;
    }
    if (src.uri.rfind("generated://", 0) == 0) {
      try {
        generated_preset(src.uri);  // rendered on first use by msomni-run
      } catch (const std::invalid_argument& e) {
        errors.push_back(located(cfg, key, e.what()));
      }
      continue;
    }
    if (is_remote_source(src.uri)) {
      if (auto problem = remote_source_problem(src.uri); !problem.empty()) {
        errors.push_back(located(cfg, key, problem));
        continue;
      }
      // The store answers here (listing, one shard's index): an unreachable store, missing
      // credentials or a cache below one shard are refused before anything starts.
      if (usable_source) try {
          if (auto unusable = usable_source(fs::path(src.uri), src.kind, uint64_t(cfg.io.max_sample_bytes));
              !unusable.empty())
            errors.push_back(located(cfg, key, unusable));
        } catch (const std::exception& e) {
          errors.push_back(located(cfg, key, std::string("cannot read ") + src.uri + ": " + e.what()));
        }
      continue;
    }
    if (src.uri.find("://") != std::string::npos && src.uri.rfind("file://", 0) != 0) {
      errors.push_back(located(cfg, key, "unsupported scheme in \"" + src.uri +
                                             "\" (local paths, file://, s3://, http://, https://, synthetic:// and "
                                             "generated:// only)"));
      continue;
    }
    const auto path = resolve_data_path(cfg, src.uri);
    if (auto problem = data_path_problem(path); !problem.empty())
      errors.push_back(located(cfg, key, problem));
    else if (usable_source)
      if (auto unusable = usable_source(path, src.kind, uint64_t(cfg.io.max_sample_bytes)); !unusable.empty())
        errors.push_back(located(cfg, key, unusable));
  }
  if (!cfg.io.s3_credentials_file.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(cfg.io.s3_credentials_file, ec))
      errors.push_back(located(cfg, "io.s3_credentials_file", cfg.io.s3_credentials_file + " is not a readable file"));
  }
  if (!cfg.model.plugin.empty()) {
    fs::path p(cfg.model.plugin);
    if (p.has_parent_path() && !p.is_absolute()) p = config_dir(cfg) / p;
    std::error_code ec;
    if (p.has_parent_path() && !fs::exists(p, ec))
      errors.push_back(located(cfg, "model.plugin", "plugin " + p.string() + " does not exist"));
  }
  if (fs::path(cfg.checkpoint.dir).is_absolute()) {
    fs::path probe(cfg.checkpoint.dir);
    std::error_code ec;
    while (!probe.empty() && !fs::exists(probe, ec)) probe = probe.parent_path();
    if (probe.empty() || ::access(probe.c_str(), W_OK) != 0)
      errors.push_back(located(cfg, "checkpoint.dir", "cannot create or write under " + probe.string()));
  }
  for (const auto& [key, port] : {std::pair{"cluster.control_port", cfg.cluster.control_port},
                                  std::pair{"cluster.metrics_port", cfg.cluster.metrics_port}}) {
    if (port <= 0) continue;  // 0: any free port (control) or off (metrics); metrics "auto" is -1
    if (auto p = port_problem(cfg.cluster.control_host, port); !p.empty())
      errors.push_back(located(cfg, key, p));
  }
  return errors;
}

}  // namespace msomni::config
