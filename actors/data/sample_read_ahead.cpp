// The sample fetcher's read-ahead hints (see source_reader.hpp, hint_ahead): which upcoming
// draws to hint (read_ahead_window.hpp) and the runs one GET each serves (read_runs.hpp).
#include "sample_read_ahead.hpp"

#include "read_runs.hpp"

#include "core/log.hpp"

#include <algorithm>

namespace msomni::data {

read_ahead_window sample_fetcher::read_ahead(uint32_t source) {
  auto& a = ahead_->sources.at(source);
  if (!a.window) {
    read_ahead_window w = storage_->read_ahead(sources_->at(source).spec().uri);
    w.bytes /= std::max<size_t>(1, sources_->size());  // the sources share the bound
    a.window = w;
  }
  return *a.window;
}

std::shared_ptr<const shard_listing> sample_fetcher::listing_of(uint32_t source, size_t shard) {
  const source_index& src = sources_->at(source);
  if (auto l = src.listed(shard)) return l;
  if (auto it = listings_->by_shard.find({source, shard}); it != listings_->by_shard.end()) return it->second.samples;
  try {
    const auto file = storage_->open(src.shards()[shard].path);
    return file ? list_and_keep(source, shard, *file) : nullptr;
  } catch (const std::exception& e) {
    // A hint only: the read meets the same failure with its reason.
    MSOMNI_LOG(debug, "data.reader") << "no read-ahead for " << src.shards()[shard].path << ": " << e.what();
    return nullptr;
  }
}

namespace {

// One upcoming draw as the window and the runs see it.
struct upcoming_draw {
  uint64_t draw = 0;
  size_t shard = 0;
  run_item item;
  std::vector<byte_range> reads;  // empty: nothing of it is read ahead
};

}  // namespace

void sample_fetcher::hint_ahead(uint32_t source, const std::deque<uint64_t>& upcoming) {
  const read_ahead_window w = read_ahead(source);
  auto& a = ahead_->sources.at(source);
  if (!wants_more(w, a.held_sum)) return;
  const source_index& src = sources_->at(source);
  const uint64_t n = src.samples_per_epoch();
  const uint64_t room = w.samples - std::min(w.samples, a.held_sum.samples);

  // The draws not hinted yet, one more than there is room for (to see whether the last
  // shard's draws are all there).
  std::vector<upcoming_draw> next;
  std::vector<ahead_draw> window_view;
  uint64_t group = UINT64_MAX;
  std::shared_ptr<const shard_listing> listing;
  std::vector<size_t> perm;
  for (auto it = upcoming.begin() + ptrdiff_t(std::min(a.held.size(), upcoming.size()));
       it != upcoming.end() && next.size() <= room; ++it) {
    const uint64_t draw = *it, epoch = draw / n, pos = draw % n;
    if (a.layout.epoch != epoch) a.layout = src.layout(epoch);
    const auto& start = a.layout.start;
    const size_t p = a.layout.slot_of(pos);
    const size_t shard = a.layout.order[p];
    const uint64_t g = epoch * (a.layout.order.size() + 1) + p;
    if (g != group) {
      group = g;
      listing = listing_of(source, shard);
      if (listing && listing->size() != src.shards()[shard].samples) listing = nullptr;  // changed since indexed
      perm = listing ? src.sample_order(epoch, shard, listing->size()) : std::vector<size_t>{};
    }
    upcoming_draw u{draw, shard, {}, {}};
    if (listing) {
      const shard_sample& e = (*listing)[perm[pos - start[p]]];
      const sample_reads plan = plan_reads(e, src.spec().kind, src.spec().max_sample_bytes);
      if (!plan.too_large && !plan.reads.empty()) {
        // The same reads read() makes: one span of the used members, or each member alone.
        if (plan.span_bytes > 0) {
          u.reads.push_back({plan.span_offset, plan.span_bytes});
        } else {
          for (const auto& r : plan.reads) u.reads.push_back({r.member->data_offset, r.member->size});
        }
        uint64_t first = UINT64_MAX, last = 0, lo = UINT64_MAX, hi = 0;
        for (const auto& m : e.members) {
          first = std::min(first, m.data_offset);
          last = std::max(last, m.data_offset + m.size);
        }
        for (const auto& r : u.reads) {
          lo = std::min(lo, r.offset);
          hi = std::max(hi, r.offset + r.length);
        }
        u.item = record_of(first, last, lo, hi);
      }
    }
    window_view.push_back({g, u.reads.empty() ? 0 : u.item.record_end - u.item.record_begin});
    next.push_back(std::move(u));
  }
  const size_t take = next_chunk(window_view, false, w, a.held_sum);
  if (take == 0) return;

  // Each shard's draws of the chunk form runs; the runs are hinted in the order their first
  // draw is read.
  struct hint {
    size_t first_read;
    size_t shard;
    byte_range span;
    std::vector<byte_range> reads;
  };
  std::vector<hint> hints;
  for (size_t b = 0; b < take;) {
    size_t e = b;
    std::vector<run_item> items;
    std::vector<size_t> index;
    while (e < take && window_view[e].group == window_view[b].group) {
      if (!next[e].reads.empty()) {
        items.push_back(next[e].item);
        index.push_back(e);
      }
      ++e;
    }
    for (const read_run& r : plan_runs(items)) {
      hint h{SIZE_MAX, next[b].shard, {r.offset, r.length}, {}};
      for (const size_t i : r.items) {
        h.first_read = std::min(h.first_read, index[i]);
        const auto& reads = next[index[i]].reads;
        h.reads.insert(h.reads.end(), reads.begin(), reads.end());
      }
      hints.push_back(std::move(h));
    }
    b = e;
  }
  std::sort(hints.begin(), hints.end(), [](const hint& x, const hint& y) { return x.first_read < y.first_read; });
  for (const auto& h : hints) storage_->prefetch(src.shards()[h.shard].path, h.span, h.reads);
  for (size_t i = 0; i < take; ++i) {
    a.held.emplace_back(next[i].draw, window_view[i].bytes);
    ++a.held_sum.samples;
    a.held_sum.bytes += window_view[i].bytes;
  }
}

}  // namespace msomni::data
