// Storage probes: free space under the checkpoint root for checkpoint.keep checkpoints of
// this model, a write + fsync sample in a temporary file it creates and removes, the latest
// checkpoint verified and compared with this config, and leftover temporaries. Nothing is
// created in the checkpoint root: a root that does not exist yet is judged by the nearest
// directory above it.
#include "health_probes.hpp"

#include "checkpoint_error.hpp"
#include "checkpoint_policy.hpp"
#include "checkpoint_store.hpp"
#include "config/resume_compatibility.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace msomni::health {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr double min_write_mb_s = 20.0;

fs::path nearest_existing(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p, ec).lexically_normal();
  while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  return p;
}

write_fact write_sample(const fs::path& dir, uint64_t bytes) {
  write_fact f;
  f.dir = dir.string();
  f.bytes = bytes;
  std::string name = (dir / ".msomni-health-XXXXXX").string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    f.error = "cannot create a temporary file in " + dir.string() + ": " + std::strerror(errno);
    return f;
  }
  // Removed at once, while `name` is still the file mkstemp just created exclusively (nothing
  // else can have taken the name yet); the sample writes through the open descriptor, and the
  // space goes back when it is closed. Nothing is left behind even if the probe is killed.
  if (::unlink(name.c_str()) != 0) {
    f.error = "cannot remove the temporary file " + name + " it created: " + std::strerror(errno);
    ::close(fd);
    return f;
  }
  std::vector<char> block(size_t{1} << 20, 'x');
  const auto t0 = clock_type::now();
  for (uint64_t done = 0; done < bytes && f.error.empty();) {
    const auto n = ::write(fd, block.data(), std::min<uint64_t>(block.size(), bytes - done));
    if (n <= 0) f.error = std::string("write to ") + name + ": " + std::strerror(errno);
    else done += uint64_t(n);
  }
  if (f.error.empty() && ::fsync(fd) != 0) f.error = std::string("fsync of ") + name + ": " + std::strerror(errno);
  f.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  ::close(fd);
  return f;
}

}  // namespace

void probe_storage(const config::job_config& cfg, const health_options& o, const add_fn& add) {
  const fs::path root = o.checkpoint_dir;
  const fs::path existing = nearest_existing(root);
  std::string why;
  const auto estimate = estimate_model_memory(cfg, why);
  struct statvfs vfs {};
  if (!estimate) {
    add(skipped("storage.free_space", why));
  } else if (::statvfs(existing.c_str(), &vfs) != 0) {
    add(judge_problems("storage.free_space", {"statvfs " + existing.string() + ": " + std::strerror(errno)}, ""));
  } else {
    disk_fact d;
    d.dir = existing.string();
    d.free_bytes = uint64_t(vfs.f_bavail) * uint64_t(vfs.f_frsize);
    d.checkpoint_bytes = uint64_t(estimate->parameter_bytes + estimate->optimizer_bytes);
    d.keep = cfg.checkpoint.keep;
    add(judge_disk_space(d));
  }
  const uint64_t sample = o.level == health_level::quick ? (uint64_t{4} << 20) : (uint64_t{64} << 20);
  add(judge_write_speed(write_sample(existing, sample), min_write_mb_s));

  checkpoint_fact c;
  std::error_code ec;
  c.root_exists = fs::is_directory(root, ec);
  std::vector<std::string> temporaries;
  if (c.root_exists) {
    try {
      ckpt::checkpoint_store store(root);  // the root exists: the store creates nothing
      const auto listing = store.list();
      for (const auto& e : listing)
        if (ckpt::classify_entry(e).cls == ckpt::entry_class::temporary) temporaries.push_back(e.name);
      // The ranks' own order (checkpoint_store::load_latest), quietly: newest first, every shard
      // verified, falling back past damage. The report says what the ranks would log.
      for (const uint64_t step : ckpt::load_order(listing)) {
        try {
          const auto v = store.load(step, {0});
          c.loaded_step = step;
          c.config_known = !v.m.meta.config.empty();
          for (const auto& k : config::compare_for_resume(v.m.meta.config, cfg.resolved_values).refused)
            c.refused_keys.push_back(k.key);
          break;
        } catch (const std::exception& e) {
          c.skipped.push_back(ckpt::checkpoint_dir_name(step) + ": " + e.what());
        }
      }
    } catch (const std::exception& e) {
      c.verify_error = e.what();
    }
  }
  add(judge_latest_checkpoint(c));
  add(judge_resume_config(c));
  add(judge_stale_temps(c.root_exists, temporaries));
}

}  // namespace msomni::health
