// The remote read-ahead pool (see remote_prefetch.hpp).
#include "remote_prefetch.hpp"

#include "remote_io.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace msomni::data {

void prefetcher::hint(const std::string& uri, const byte_range& span, const std::vector<byte_range>& reads) {
  const auto s = remote_io();
  auto& c = remote_counters();
  if (s.prefetch_samples == 0 || span.length == 0 || reads.empty()) return;
  std::lock_guard lock(m_);
  if (auto it = by_uri_.find(uri); it != by_uri_.end())
    for (auto [a, b] = it->second.equal_range(span.offset); a != b; ++a)
      if (a->second->span.length == span.length) {
        // The same span hinted again (the shard's draws of a later epoch): its GET serves these
        // reads too, and it is held until they are taken as well.
        auto& held = a->second->reads;
        held.insert(held.end(), reads.begin(), reads.end());
        c.prefetch_samples += reads.size();
        return;
      }
  while (held_ + span.length > s.prefetch_bytes) {
    run_ptr oldest;
    for (const auto& [seq, r] : by_seq_)
      if (r->st == state::done && r->waiters == 0) {
        oldest = r;
        break;
      }
    if (!oldest) {
      ++c.prefetch_dropped;
      return;
    }
    forget(oldest);
    ++c.prefetch_dropped;
  }
  auto r = std::make_shared<run>();
  r->uri = uri;
  r->span = span;
  r->reads = reads;
  r->seq = ++seq_;
  by_uri_[uri].emplace(span.offset, r);
  by_seq_.emplace(r->seq, r);
  held_ += span.length;
  queue_.push_back(r);
  ++c.prefetch_issued;
  c.prefetch_samples += reads.size();
  c.prefetch_capacity = s.prefetch_bytes;
  publish();
  const size_t want = size_t(std::min<uint64_t>(s.prefetch_samples, 16));
  for (; threads_ < want; ++threads_) std::thread([this] { work(); }).detach();
  cv_.notify_one();
}

prefetcher::run_ptr prefetcher::find(const std::string& uri, uint64_t offset, uint64_t n) const {
  const auto it = by_uri_.find(uri);
  if (it == by_uri_.end()) return nullptr;
  // The runs starting at or before `offset`, nearest first (runs of one shard rarely overlap):
  // one hinted with this very read, else any holding its bytes.
  run_ptr any;
  auto r = it->second.upper_bound(offset);
  for (int looked = 0; r != it->second.begin() && looked < 8; ++looked) {
    --r;
    const run& x = *r->second;
    if (offset + n > x.span.offset + x.span.length) continue;
    if (std::any_of(x.reads.begin(), x.reads.end(), [&](const byte_range& b) { return b.offset == offset && b.length == n; }))
      return r->second;
    if (!any) any = r->second;
  }
  return any;
}

void prefetcher::forget(const run_ptr& r) {
  auto it = by_uri_.find(r->uri);
  if (it != by_uri_.end()) {
    for (auto [a, b] = it->second.equal_range(r->span.offset); a != b; ++a)
      if (a->second == r) {
        it->second.erase(a);
        break;
      }
    if (it->second.empty()) by_uri_.erase(it);
  }
  if (by_seq_.erase(r->seq)) held_ -= r->span.length;
  if (r->st == state::queued) std::erase(queue_, r);
  publish();
}

bool prefetcher::take(const std::string& uri, uint64_t offset, void* dst, size_t n) {
  std::unique_lock lock(m_);
  const run_ptr r = find(uri, offset, n);
  if (!r) return false;
  if (r->st == state::queued) {
    // Nobody has started it: this reader makes the run's GET itself.
    std::erase(queue_, r);
    r->st = state::running;
    lock.unlock();
    fill(*r);
    lock.lock();
    r->st = state::done;
    done_.notify_all();
  }
  ++r->waiters;
  done_.wait(lock, [&] { return r->st == state::done; });
  --r->waiters;
  const bool ok = r->ok && r->bytes.size() == r->span.length;
  if (ok) std::memcpy(dst, r->bytes.data() + (offset - r->span.offset), n);
  auto& reads = r->reads;
  if (auto it = std::find_if(reads.begin(), reads.end(), [&](const byte_range& b) { return b.offset == offset && b.length == n; });
      it != reads.end())
    reads.erase(it);
  if (reads.empty() || !ok) forget(r);  // all taken, or failed: its readers read themselves
  return ok;
}

void prefetcher::fill(run& r) {
  std::string bytes(size_t(r.span.length), '\0');
  r.ok = read_(r.uri, r.span.offset, bytes);
  r.bytes = std::move(bytes);
}

void prefetcher::work() {
  for (;;) {
    run_ptr r;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !queue_.empty(); });
      r = queue_.front();
      queue_.pop_front();
      r->st = state::running;
    }
    fill(*r);
    std::lock_guard lock(m_);
    r->st = state::done;
    done_.notify_all();
  }
}

void prefetcher::publish() const { remote_counters().prefetch_held = held_; }

}  // namespace msomni::data
