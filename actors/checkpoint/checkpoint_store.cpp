// Save, commit, merge and cleanup of a checkpoint root (see checkpoint_store.hpp). Loading
// and verification live in checkpoint_load.cpp.
#include "checkpoint_store.hpp"

#include "checkpoint_error.hpp"
#include "core/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace msomni::ckpt {

namespace fs = std::filesystem;

checkpoint_store::checkpoint_store(fs::path root, store_options opts)
    : root_(std::move(root)), opts_(opts) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw checkpoint_error("create checkpoint root " + root_.string() + ": " + ec.message(),
                                 ec.value());
}

std::string checkpoint_store::next_temp_name(const std::string& what) const {
  // pid + counter: unique among every writer sharing this root on one host; ranks on other
  // hosts write into their own shard names, so collisions need the same pid and counter
  // on two hosts for the same file, which O_EXCL then refuses loudly.
  static std::atomic<uint64_t> counter{0};
  return ".tmp-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

shard_record checkpoint_store::write_shard(const checkpoint_meta& meta, uint32_t rank,
                                           const rank_state& state,
                                           shard_encoder& encoder) const {
  if (rank >= meta.world_size)
    throw checkpoint_error("rank " + std::to_string(rank) + " outside world_size " +
                           std::to_string(meta.world_size));
  const fs::path staging = root_ / staging_dir_name(meta.step, meta.epoch);
  make_dir(staging, opts_.faults);
  const std::string name = shard_file_name(rank);
  durable_file f(staging / name, staging / next_temp_name(name), opts_.faults);
  const shard_summary sum = encoder.encode(state, rank, meta.step, f);
  f.commit();
  return {rank, sum.bytes, sum.xxh3, sum.raw_bytes, sum.entries, checkpoint_dir_name(meta.step)};
}

manifest checkpoint_store::commit(const checkpoint_meta& meta, std::vector<shard_record> written,
                                  checkpoint_kind kind, uint64_t base_step) {
  auto m = commit_durable(meta, std::move(written), kind, base_step);
  const auto plan = cleanup();
  for (const auto& why : plan.reasons) MSOMNI_LOG(debug, "checkpoint") << "removed " << why;
  return m;
}

manifest checkpoint_store::commit_durable(const checkpoint_meta& meta, std::vector<shard_record> written,
                                          checkpoint_kind kind, uint64_t base_step) {
  const std::string final_name = checkpoint_dir_name(meta.step);
  const fs::path staging = root_ / staging_dir_name(meta.step, meta.epoch);
  manifest m{meta, kind, kind == checkpoint_kind::incremental ? base_step : 0, {}};
  std::map<uint32_t, shard_record> by_rank;
  if (kind == checkpoint_kind::incremental) {
    if (base_step >= meta.step)
      throw checkpoint_error(final_name + ": base step " + std::to_string(base_step) +
                             " is not older");
    const manifest base = read_manifest(base_step);
    if (base.meta.world_size != meta.world_size)
      throw checkpoint_error(final_name + ": incremental needs the base's world size " +
                             std::to_string(base.meta.world_size) + ", got " +
                             std::to_string(meta.world_size));
    for (const auto& s : base.shards) by_rank[s.rank] = s;
  }
  for (auto& s : written) {
    if (s.dir != final_name)
      throw checkpoint_error(final_name + ": shard of rank " + std::to_string(s.rank) +
                             " was written for " + s.dir);
    by_rank[s.rank] = s;
  }
  for (uint32_t r = 0; r < meta.world_size; ++r) {
    auto it = by_rank.find(r);
    if (it == by_rank.end())
      throw checkpoint_error(final_name + ": no shard for rank " + std::to_string(r) +
                             " (world_size " + std::to_string(meta.world_size) + ")");
    m.shards.push_back(it->second);
  }
  if (by_rank.size() != meta.world_size)
    throw checkpoint_error(final_name + ": shards for ranks beyond world_size " +
                           std::to_string(meta.world_size));
  // A cheap completeness check before the point of no return; contents are verified by
  // loading (verify-by-loading), which the orchestrator does before trusting a scale-down.
  for (const auto& s : written) {
    const fs::path p = staging / shard_file_name(s.rank);
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    if (ec || size != s.bytes)
      throw checkpoint_error(p.string() + ": expected " + std::to_string(s.bytes) +
                             " bytes, found " + (ec ? ec.message() : std::to_string(size)));
  }
  make_dir(staging, opts_.faults);  // an incremental with no changed rank has no shard yet
  write_file_atomically(staging / manifest_file, render_manifest(m),
                        next_temp_name(std::string(manifest_file)), opts_.faults);
  const fs::path final_path = root_ / final_name;
  if (fs::exists(final_path)) {
    // Re-saving a step (after a resume): move the old one aside first, because rename(2)
    // cannot replace a non-empty directory. A crash here loses only that older copy.
    const fs::path trash = root_ / (".trash-" + final_name + next_temp_name("old"));
    durable_rename(final_path, trash, opts_.faults);
  }
  durable_rename(staging, final_path, opts_.faults);
  write_file_atomically(root_ / latest_file, final_name + "\n", next_temp_name("latest"),
                        opts_.faults);
  return m;
}

bool checkpoint_store::abandon(const checkpoint_meta& meta) {
  const fs::path staging = root_ / staging_dir_name(meta.step, meta.epoch);
  std::error_code ec;
  if (!fs::exists(staging, ec)) return false;
  remove_tree(staging, opts_.faults);
  fsync_dir(root_, opts_.faults);
  return true;
}

manifest checkpoint_store::save_full(const checkpoint_meta& meta,
                                     const std::vector<rank_state>& ranks) {
  if (ranks.size() != meta.world_size)
    throw checkpoint_error("save_full: " + std::to_string(ranks.size()) +
                           " rank states for world_size " + std::to_string(meta.world_size));
  shard_encoder enc(opts_.codec);
  std::vector<shard_record> recs;
  for (uint32_t r = 0; r < ranks.size(); ++r) recs.push_back(write_shard(meta, r, ranks[r], enc));
  return commit(meta, std::move(recs));
}

manifest checkpoint_store::save_incremental(const checkpoint_meta& meta, uint64_t base_step,
                                            const std::map<uint32_t, rank_state>& changed) {
  shard_encoder enc(opts_.codec);
  std::vector<shard_record> recs;
  for (const auto& [r, st] : changed) recs.push_back(write_shard(meta, r, st, enc));
  return commit(meta, std::move(recs), checkpoint_kind::incremental, base_step);
}

manifest checkpoint_store::merge(uint64_t step) {
  manifest m = read_manifest(step);
  if (m.kind == checkpoint_kind::full) return m;
  const std::string own = checkpoint_dir_name(step);
  const fs::path dir = root_ / own;
  for (auto& s : m.shards) {
    if (s.dir == own) continue;
    const fs::path from = root_ / s.dir / shard_file_name(s.rank);
    const auto bytes = read_file(from);
    if (bytes.size() != s.bytes || xxh3_of(bytes) != s.xxh3)
      throw checkpoint_error(from.string() + ": does not match " + own +
                             "'s manifest (expected xxh3 " + hex64(s.xxh3) + "), merge refused");
    const std::string name = shard_file_name(s.rank);
    durable_file f(dir / name, dir / next_temp_name(name), opts_.faults);
    f.write(bytes.data(), bytes.size());
    f.commit();
    s.dir = own;
  }
  // Until this rename the old manifest rules; copied files it does not name are harmless.
  m.kind = checkpoint_kind::full;
  m.base_step = 0;
  write_file_atomically(dir / manifest_file, render_manifest(m),
                        next_temp_name(std::string(manifest_file)), opts_.faults);
  return m;
}

std::vector<root_entry> checkpoint_store::list() const {
  std::vector<root_entry> out;
  for (const auto& e : fs::directory_iterator(root_))
    out.push_back({e.path().filename().string(), e.is_directory()});
  std::sort(out.begin(), out.end(),
            [](const root_entry& a, const root_entry& b) { return a.name < b.name; });
  return out;
}

namespace {
std::optional<std::string> read_latest_pointer(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(root / latest_file, ec)) return std::nullopt;
  std::string t = read_text_file(root / latest_file);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}
}  // namespace

std::optional<std::string> checkpoint_store::latest_pointer() const { return read_latest_pointer(root_); }

std::optional<std::string> latest_pointer_of(const fs::path& root) {
  try {
    return read_latest_pointer(root);
  } catch (const checkpoint_error&) {  // unreadable: nothing to name
    return std::nullopt;
  }
}

std::optional<uint64_t> latest_step(const fs::path& root) {
  const auto name = latest_pointer_of(root);
  return name ? parse_checkpoint_dir_name(*name) : std::nullopt;
}

manifest checkpoint_store::read_manifest(uint64_t step) const {
  const fs::path p = root_ / checkpoint_dir_name(step) / manifest_file;
  manifest m = parse_manifest(read_text_file(p), p.string());
  if (m.meta.step != step)
    throw checkpoint_error(p.string() + ": says step " + std::to_string(m.meta.step) +
                           " inside directory of step " + std::to_string(step));
  return m;
}

std::vector<checkpoint_status> checkpoint_store::scan_checkpoints(
    const std::vector<root_entry>& listing) const {
  std::vector<checkpoint_status> out;
  for (uint64_t step : load_order(listing)) {
    checkpoint_status st{step, false, {}, {}};
    try {
      const manifest m = read_manifest(step);
      st.manifest_ok = true;
      for (const auto& s : m.shards)
        if (s.dir != checkpoint_dir_name(step))
          st.references.insert(*parse_checkpoint_dir_name(s.dir));
    } catch (const std::exception& e) {
      st.problem = e.what();
    }
    out.push_back(std::move(st));
  }
  return out;
}

cleanup_plan checkpoint_store::cleanup(const std::set<std::string>& in_flight) {
  const auto listing = list();
  const cleanup_plan plan = plan_cleanup(listing, scan_checkpoints(listing), opts_.keep, in_flight);
  for (const auto& name : plan.remove) {
    // A committed directory is renamed away first so that a crash in the middle of
    // removing it never leaves a half-deleted step-* directory that looks committed.
    if (classify_entry({name, true}).cls == entry_class::checkpoint) {
      const fs::path trash = root_ / (".trash-" + name + next_temp_name("retired"));
      durable_rename(root_ / name, trash, opts_.faults);
      remove_tree(trash, opts_.faults);
    } else {
      remove_tree(root_ / name, opts_.faults);
    }
  }
  if (!plan.remove.empty()) fsync_dir(root_, opts_.faults);
  return plan;
}

}  // namespace msomni::ckpt
