// Shard dealing, shuffling and the resumable cursor of one source (see source_reader.hpp).
#include "source_reader.hpp"

#include "core/log.hpp"
#include "core/rng.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace msomni::data {
namespace {

void shuffle_with(std::vector<size_t>& v, rng_stream rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// WebDataset key and extension: "dir/000123.seg.jpg" -> ("dir/000123", "seg.jpg").
std::pair<std::string, std::string> split_member(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

}  // namespace

source_reader::source_reader(uint32_t index, source_spec spec, rank_slot slot, uint64_t seed,
                             bool shuffle, std::shared_ptr<const storage> st)
    : index_(index), spec_(std::move(spec)), slot_(slot), seed_(seed), shuffle_(shuffle),
      storage_(std::move(st)) {
  shards_ = storage_->list_shards(spec_.uri);
  if (shards_.empty()) throw std::runtime_error("data source '" + spec_.name + "': no .tar shards at " + spec_.uri);
  if (slot_.world == 0 || slot_.rank >= slot_.world) throw std::invalid_argument("source_reader: bad rank slot");
  cursor_.source = spec_.name;
}

std::vector<size_t> source_reader::shard_order(size_t shard_count, rank_slot slot, uint64_t seed,
                                               const std::string& source, uint64_t epoch, bool shuffle) {
  std::vector<size_t> all(shard_count);
  std::iota(all.begin(), all.end(), size_t{0});
  // Same stream on every rank (rank argument 0): ranks agree on the order, then deal it out.
  if (shuffle) shuffle_with(all, rng_stream::derive(seed, "data.shards/" + source, epoch));
  std::vector<size_t> mine;
  for (size_t i = slot.rank; i < all.size(); i += slot.world) mine.push_back(all[i]);
  // Fewer shards than ranks: this rank re-reads one shard rather than idling the replica.
  if (mine.empty()) mine.push_back(all[slot.rank % all.size()]);
  return mine;
}

void source_reader::seek(const msg::source_cursor& c) {
  if (c.source != spec_.name) throw std::invalid_argument("cursor for '" + c.source + "' given to source '" + spec_.name + "'");
  cursor_ = c;
  pending_problems_.clear();
  next_seq_ = 0;  // a restore restarts every stage, so sequence numbers start over too
  order_epoch_ = UINT64_MAX;
  open_shard_pos_ = UINT64_MAX;
  shard_.reset();
}

void source_reader::open_epoch() {
  order_ = shard_order(shards_.size(), slot_, seed_, spec_.name, cursor_.epoch, shuffle_);
  order_epoch_ = cursor_.epoch;
  if (slot_.world > shards_.size() && cursor_.epoch == 0 && cursor_.shard == 0 && cursor_.offset == 0) {
    MSOMNI_LOG(warn, "data.reader") << "source " << spec_.name << ": " << shards_.size()
                                    << " shards for " << slot_.world << " ranks; ranks share shards";
  }
}

void source_reader::open_shard() {
  const std::string& path = shards_[order_[cursor_.shard]];
  shard_label_ = std::filesystem::path(path).filename().string();
  open_shard_pos_ = cursor_.shard;
  samples_.clear();
  perm_.clear();
  const bool fresh = cursor_.offset == 0;
  shard_ = storage_->open(path);
  if (!shard_) {
    if (fresh) pending_problems_.emplace_back(bad_reason::unreadable_shard, shard_label_);
    MSOMNI_LOG(warn, "data.reader") << "cannot open shard " << path << "; skipped";
    return;
  }
  const tar_listing listing = list_tar(*shard_);
  if (fresh) {
    for (uint32_t i = 0; i < listing.bad_header_runs; ++i) pending_problems_.emplace_back(bad_reason::bad_tar_header, shard_label_);
    if (listing.truncated) pending_problems_.emplace_back(bad_reason::truncated_shard, shard_label_);
  }
  // Members of one key are adjacent in a WebDataset shard; group runs of equal keys.
  for (const auto& m : listing.members) {
    auto [key, ext] = split_member(m.name);
    if (samples_.empty() || samples_.back().key != key) samples_.push_back({key, {}});
    samples_.back().members.push_back(m);
  }
  perm_.resize(samples_.size());
  std::iota(perm_.begin(), perm_.end(), size_t{0});
  if (shuffle_)
    shuffle_with(perm_, rng_stream::derive(seed_, "data.samples/" + spec_.name + "/" + std::to_string(cursor_.epoch),
                                           order_[cursor_.shard]));
}

raw_sample source_reader::next() {
  int empty_epochs = 0;
  bool yielded_this_epoch = cursor_.shard > 0 || cursor_.offset > 0;
  while (true) {
    if (order_epoch_ != cursor_.epoch) open_epoch();
    if (cursor_.shard >= order_.size()) {
      if (!yielded_this_epoch && ++empty_epochs >= 2)
        throw std::runtime_error("data source '" + spec_.name + "' yields no samples");
      ++cursor_.epoch;
      cursor_.shard = 0;
      cursor_.offset = 0;
      yielded_this_epoch = false;
      continue;
    }
    if (open_shard_pos_ != cursor_.shard) open_shard();
    if (cursor_.offset >= perm_.size()) {
      ++cursor_.shard;
      cursor_.offset = 0;
      continue;
    }
    const sample_entry& e = samples_[perm_[cursor_.offset]];
    ++cursor_.offset;
    ++cursor_.samples_read;
    raw_sample s = build(e);
    s.pos = {index_, next_seq_++, cursor_};
    s.shard_problems = std::exchange(pending_problems_, {});
    return s;
  }
}

raw_sample source_reader::build(const sample_entry& e) {
  raw_sample s;
  s.key = shard_label_ + "/" + e.key;
  s.kind = spec_.kind;
  bool has_media = false, has_caption = false;
  auto read = [&](const tar_member& m, auto& out) {
    out.resize(m.size);
    return shard_->read_at(m.data_offset, out.data(), m.size) == m.size;
  };
  for (const auto& m : e.members) {
    const std::string ext = split_member(m.name).second;
    if (ext == "txt") {
      has_caption = read(m, s.caption);
    } else if (spec_.kind == modality::image && (ext == "jpg" || ext == "jpeg" || ext == "png")) {
      has_media = read(m, s.media);
      s.media_ext = ext == "png" ? "png" : "jpg";
    } else if (spec_.kind == modality::video && ext == "mp4") {
      has_media = read(m, s.media);
      s.media_ext = "mp4";
    }
  }
  check_raw_sample(s, has_media, has_caption);
  return s;
}

}  // namespace msomni::data
