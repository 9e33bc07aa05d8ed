// Verified loading of checkpoints (see checkpoint_store.hpp): every shard's size and XXH3 and
// every entry's frame and content checksums are checked before any state is handed out; a
// checkpoint that fails is skipped with its reason and the next older one is tried.
#include "checkpoint_error.hpp"
#include "checkpoint_store.hpp"
#include "core/log.hpp"

namespace msomni::ckpt {

namespace fs = std::filesystem;

verified_checkpoint checkpoint_store::load(uint64_t step, const std::set<uint32_t>& ranks) const {
  verified_checkpoint out;
  out.m = read_manifest(step);
  if (out.m.kind == checkpoint_kind::incremental) {
    // The base must still be a loadable checkpoint of the same run, not just a directory.
    const manifest base = read_manifest(out.m.base_step);
    if (base.meta.world_size != out.m.meta.world_size)
      throw checkpoint_error(checkpoint_dir_name(step) + ": base " +
                             checkpoint_dir_name(out.m.base_step) + " has world size " +
                             std::to_string(base.meta.world_size));
  }
  out.ranks.resize(out.m.meta.world_size);
  for (const auto& s : out.m.shards) {
    const fs::path p = root_ / s.dir / shard_file_name(s.rank);
    const std::vector<uint8_t> bytes = read_file(p);
    if (bytes.size() != s.bytes)
      throw checkpoint_error(p.string() + ": size " + std::to_string(bytes.size()) +
                             ", manifest says " + std::to_string(s.bytes));
    const uint64_t actual = xxh3_of(bytes);
    if (actual != s.xxh3)
      throw checkpoint_error(p.string() + ": file checksum mismatch: expected " + hex64(s.xxh3) +
                             ", actual " + hex64(actual));
    rank_state st = decode_shard(bytes, p.string());
    // The shard's own header must agree with where the manifest put it.
    const shard_layout layout = read_shard_layout(bytes, p.string());
    if (layout.rank != s.rank)
      throw checkpoint_error(p.string() + ": holds rank " + std::to_string(layout.rank) +
                             ", manifest expects rank " + std::to_string(s.rank));
    if (ranks.empty() || ranks.count(s.rank)) out.ranks[s.rank] = std::move(st);
  }
  return out;
}

load_result checkpoint_store::load_latest(const std::set<uint32_t>& ranks) const {
  load_result res;
  const auto listing = list();
  const auto pointer = latest_pointer();
  for (uint64_t step : load_order(listing)) {
    try {
      res.checkpoint = load(step, ranks);
      break;
    } catch (const std::exception& e) {
      res.skipped.push_back(checkpoint_dir_name(step) + ": " + e.what());
      MSOMNI_LOG(warn, "checkpoint") << "not loading " << checkpoint_dir_name(step) << " ("
                                     << e.what() << "); falling back to an older checkpoint";
    }
  }
  if (res.checkpoint && pointer && *pointer != checkpoint_dir_name(res.checkpoint->m.meta.step)) {
    // Normal after a crash between the directory rename and the pointer update.
    MSOMNI_LOG(info, "checkpoint") << "latest points at " << *pointer << ", loaded "
                                   << checkpoint_dir_name(res.checkpoint->m.meta.step);
  }
  return res;
}

}  // namespace msomni::ckpt
