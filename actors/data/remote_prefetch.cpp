// The remote read-ahead pool (see remote_prefetch.hpp).
#include "remote_prefetch.hpp"

#include "remote_io.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace msomni::data {

void prefetcher::hint(const std::string& uri, uint64_t offset, uint64_t length) {
  const auto s = remote_io();
  auto& c = remote_counters();
  if (s.prefetch_samples == 0 || length == 0) return;
  std::lock_guard lock(m_);
  const key k{uri, offset, length};
  if (slots_.count(k)) return;
  const size_t max_slots = size_t(std::max<uint64_t>(1, s.prefetch_samples)) * 64;
  while (held_ + length > s.prefetch_bytes || slots_.size() >= max_slots) {
    auto oldest = slots_.end();
    for (auto it = slots_.begin(); it != slots_.end(); ++it)
      if (it->second.st == state::done && !it->second.claimed &&
          (oldest == slots_.end() || it->second.seq < oldest->second.seq))
        oldest = it;
    if (oldest == slots_.end()) {
      ++c.prefetch_dropped;
      return;
    }
    held_ -= std::get<2>(oldest->first);
    slots_.erase(oldest);
    ++c.prefetch_dropped;
  }
  slots_[k].seq = ++seq_;
  held_ += length;
  queue_.push_back(k);
  ++c.prefetch_issued;
  const size_t want = size_t(std::min<uint64_t>(s.prefetch_samples, 16));
  for (; threads_ < want; ++threads_) std::thread([this] { work(); }).detach();
  cv_.notify_one();
}

bool prefetcher::take(const std::string& uri, uint64_t offset, void* dst, size_t n) {
  std::unique_lock lock(m_);
  const key k{uri, offset, n};
  auto it = slots_.find(k);
  if (it == slots_.end()) return false;
  if (it->second.st == state::queued) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), k));
    held_ -= n;
    slots_.erase(it);
    return false;
  }
  it->second.claimed = true;
  done_.wait(lock, [&] { return it->second.st == state::done; });
  const bool ok = it->second.ok && it->second.bytes.size() == n;
  if (ok) std::memcpy(dst, it->second.bytes.data(), n);
  held_ -= n;
  slots_.erase(it);
  return ok;
}

void prefetcher::work() {
  for (;;) {
    key k;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !queue_.empty(); });
      k = queue_.front();
      queue_.pop_front();
      slots_[k].st = state::running;
    }
    std::string bytes(size_t(std::get<2>(k)), '\0');
    const bool ok = read_(std::get<0>(k), std::get<1>(k), bytes);
    std::lock_guard lock(m_);
    auto& sl = slots_[k];
    sl.st = state::done;
    sl.ok = ok;
    sl.bytes = std::move(bytes);
    done_.notify_all();
  }
}

}  // namespace msomni::data
