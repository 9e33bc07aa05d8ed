// Source orders, random access to draws, and the own-draw reader (see source_reader.hpp).
#include "source_reader.hpp"

#include "sample_read_ahead.hpp"

#include "core/log.hpp"
#include "core/rng.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace msomni::data {
namespace {

void shuffle_with(std::vector<size_t>& v, rng_stream rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

}  // namespace

source_index::source_index(uint32_t index, source_spec spec, uint64_t seed, bool shuffle, const storage& st)
    : index_(index), spec_(std::move(spec)), seed_(seed), shuffle_(shuffle) {
  const auto paths = st.list_shards(spec_.uri);
  if (paths.empty()) throw std::runtime_error("data source '" + spec_.name + "': no .tar shards at " + spec_.uri);
  for (const auto& path : paths) {
    shard_info info{path, std::filesystem::path(path).filename().string(), 0, {}};
    std::shared_ptr<const shard_listing> samples;
    uint64_t size = 0;
    if (auto file = st.open(path)) {
      const tar_listing listing = list_tar(*file);
      samples = std::make_shared<const shard_listing>(group_samples(listing));
      size = file->size();
      info.samples = samples->size();
      info.problems.assign(listing.bad_header_runs, bad_reason::bad_tar_header);
      if (listing.truncated) info.problems.push_back(bad_reason::truncated_shard);
    } else {
      info.problems.push_back(bad_reason::unreadable_shard);
      MSOMNI_LOG(warn, "data.reader") << "cannot open shard " << path << "; its samples are skipped";
    }
    samples_ += info.samples;
    shards_.push_back(std::move(info));
    listings_.push_back(std::move(samples));
    listed_sizes_.push_back(size);
  }
  if (samples_ == 0) throw std::runtime_error("data source '" + spec_.name + "' yields no samples");
  if (samples_ > listing_samples_max) std::fill(listings_.begin(), listings_.end(), nullptr);
}

std::shared_ptr<const shard_listing> source_index::listing(size_t shard, uint64_t file_size) const {
  if (shard >= listings_.size() || !listings_[shard] || listed_sizes_[shard] != file_size) return nullptr;
  return listings_[shard];
}

std::vector<size_t> source_index::shard_order(uint64_t epoch) const {
  std::vector<size_t> all(shards_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  if (shuffle_) shuffle_with(all, rng_stream::derive(seed_, "data.shards/" + spec_.name, epoch));
  return all;
}

epoch_layout source_index::layout(uint64_t epoch) const {
  epoch_layout l;
  l.epoch = epoch;
  l.order = shard_order(epoch);
  uint64_t at = 0;
  for (size_t p = 0; p < l.order.size(); ++p) {
    l.start.push_back(at);
    const shard_info& s = shards_[l.order[p]];
    // Damage of a trailing empty shard rides on the next epoch's first draw (below).
    if (at < samples_)
      for (auto r : s.problems) l.problems[at].emplace_back(r, s.label);
    at += s.samples;
  }
  l.start.push_back(at);
  if (epoch > 0) {
    const auto prev = shard_order(epoch - 1);
    uint64_t end = 0;
    std::vector<shard_problem> trailing;
    for (size_t p : prev) {
      if (end == samples_)
        for (auto r : shards_[p].problems) trailing.emplace_back(r, shards_[p].label);
      end += shards_[p].samples;
    }
    auto& first = l.problems[0];
    first.insert(first.begin(), trailing.begin(), trailing.end());
    if (first.empty()) l.problems.erase(0);
  }
  return l;
}

std::vector<size_t> source_index::sample_order(uint64_t epoch, size_t shard, size_t samples) const {
  std::vector<size_t> perm(samples);
  std::iota(perm.begin(), perm.end(), size_t{0});
  if (shuffle_)
    shuffle_with(perm, rng_stream::derive(seed_, "data.samples/" + spec_.name + "/" + std::to_string(epoch), shard));
  return perm;
}

msg::source_cursor source_index::cursor_at(uint64_t draws) const {
  const uint64_t epoch = draws / samples_, pos = draws % samples_;
  const epoch_layout l = layout(epoch);
  const size_t p = l.slot_of(pos);
  return {spec_.name, epoch, p, pos - l.start[p], draws};
}

struct sample_fetcher::open_shard {
  epoch_layout layout;
  size_t shard = SIZE_MAX;
  uint64_t epoch = UINT64_MAX;
  std::unique_ptr<byte_source> file;
  std::shared_ptr<const shard_listing> samples = std::make_shared<const shard_listing>();
  std::vector<size_t> perm;
  std::vector<uint8_t> span;  // one sample's members read at once
};

sample_fetcher::sample_fetcher(std::shared_ptr<const source_list> sources, std::shared_ptr<const storage> st)
    : sources_(std::move(sources)), storage_(std::move(st)) {
  open_.resize(sources_->size());
  for (auto& o : open_) o = std::make_unique<open_shard>();
  listings_ = std::make_unique<listing_cache>();
  ahead_ = std::make_unique<read_ahead_state>();
  ahead_->sources.resize(sources_->size());
}

sample_fetcher::sample_fetcher(sample_fetcher&&) noexcept = default;
sample_fetcher::~sample_fetcher() = default;

void sample_fetcher::open_shard_of(uint32_t source, size_t shard, uint64_t epoch) {
  const source_index& src = sources_->at(source);
  open_shard& o = *open_[source];
  o.samples = std::make_shared<const shard_listing>();
  o.shard = shard;
  o.epoch = epoch;
  o.file = storage_->open(src.shards()[shard].path);
  if (o.file) {
    const uint64_t size = o.file->size();
    auto& cache = *listings_;
    const auto it = cache.by_shard.find({source, shard});
    if (it != cache.by_shard.end() && it->second.file_size == size) {
      o.samples = it->second.samples;
    } else if (auto listed = src.listing(shard, size)) {
      o.samples = std::move(listed);  // walked by the index at start; the index keeps it
    } else {
      o.samples = list_and_keep(source, shard, *o.file);
    }
  }
  o.perm = src.sample_order(epoch, shard, o.samples->size());
}

std::shared_ptr<const shard_listing> sample_fetcher::list_and_keep(uint32_t source, size_t shard,
                                                                   const byte_source& file) {
  auto listing = std::make_shared<const shard_listing>(group_samples(list_tar(file)));
  auto& cache = *listings_;
  if (const auto it = cache.by_shard.find({source, shard}); it != cache.by_shard.end()) {
    cache.held -= it->second.samples->size();
    cache.by_shard.erase(it);
  }
  if (cache.held + listing->size() <= listing_cache::max_samples) {
    cache.by_shard[{source, shard}] = {file.size(), listing};
    cache.held += listing->size();
  }
  return listing;
}

raw_sample sample_fetcher::read(uint32_t source, uint64_t draw, bool primary) {
  const source_index& src = sources_->at(source);
  open_shard& o = *open_[source];
  ahead_->sources[source].read(draw);
  const uint64_t epoch = draw / src.samples_per_epoch(), pos = draw % src.samples_per_epoch();
  if (o.layout.epoch != epoch) o.layout = src.layout(epoch);
  const auto& start = o.layout.start;
  const size_t p = o.layout.slot_of(pos);
  const size_t shard = o.layout.order[p];
  const shard_info& info = src.shards()[shard];

  raw_sample s;
  s.kind = src.spec().kind;
  s.pos.source = source;
  s.pos.draw = draw;
  if (primary)
    if (auto it = o.layout.problems.find(pos); it != o.layout.problems.end()) s.shard_problems = it->second;
  if (o.shard != shard || o.epoch != epoch || !o.file) open_shard_of(source, shard, epoch);
  const uint64_t offset = pos - start[p];
  if (!o.file || o.samples->size() != info.samples) {
    // The shard changed or vanished since it was listed: its samples are lost for now.
    s.key = info.label + "/#" + std::to_string(offset);
    s.bad = true;
    s.reason = bad_reason::unreadable_shard;
    s.cause = o.file ? "the shard changed since it was listed" : "the shard can no longer be opened";
    o.file.reset();
    return s;
  }
  const shard_sample& e = (*o.samples)[o.perm[offset]];
  s.key = info.label + "/" + e.key;
  // Only the members this sample uses are read, and none larger than the source's bound.
  const sample_reads plan = plan_reads(e, s.kind, src.spec().max_sample_bytes);
  raw_sample_assembler sample(std::move(s));
  if (plan.too_large) return std::move(sample).too_large(*plan.too_large, src.spec().max_sample_bytes);
  // One read of the members' span when the plan says so; if it comes back short, members are
  // read one by one.
  bool spanned = plan.span_bytes > 0;
  if (spanned) {
    o.span.resize(size_t(plan.span_bytes));
    spanned = o.file->read_at(plan.span_offset, o.span.data(), o.span.size()) == o.span.size();
  }
  for (const auto& r : plan.reads) {
    const tar_member& m = *r.member;
    std::vector<uint8_t> bytes;
    bool complete = true;
    if (spanned) {
      const uint8_t* at = o.span.data() + (m.data_offset - plan.span_offset);
      bytes.assign(at, at + m.size);
    } else {
      bytes.resize(m.size);
      complete = o.file->read_at(m.data_offset, bytes.data(), m.size) == m.size;
    }
    sample.add(r, std::move(bytes), complete);
  }
  return std::move(sample).finish();
}

own_reader::own_reader(order_core plan, sample_fetcher fetcher)
    : plan_(std::move(plan)), fetcher_(std::move(fetcher)) {
  planned_.resize(fetcher_.sources().size());
  seq_.assign(fetcher_.sources().size(), 0);
}

bool own_reader::ready(uint32_t source) {
  auto& q = planned_.at(source);
  while (q.empty() && planned_total_ < max_planned) {
    const order_entry e = plan_.next();
    planned_.at(e.source).push_back(e.draw);
    ++planned_total_;
  }
  return !q.empty();
}

raw_sample own_reader::next(uint32_t source) {
  if (!ready(source)) throw std::logic_error("own_reader: no planned draw of source " + std::to_string(source));
  auto& q = planned_[source];
  // A remote source's next own draws (this one first) are hinted ahead: planned past the
  // window so that its last shard is seen whole (the storage bounds what it holds).
  if (const read_ahead_window w = fetcher_.read_ahead(source); w.samples > 0) {
    while (q.size() <= w.samples && planned_total_ < max_planned) {
      const order_entry e = plan_.next();
      planned_.at(e.source).push_back(e.draw);
      ++planned_total_;
    }
    fetcher_.hint_ahead(source, q);
  }
  const uint64_t draw = q.front();
  q.pop_front();
  --planned_total_;
  raw_sample s = fetcher_.read(source, draw, true);
  s.pos.seq = seq_[source]++;
  return s;
}

}  // namespace msomni::data
