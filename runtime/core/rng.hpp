// Seeded randomness split into named, independent streams: one job seed yields a stream per
// (purpose, rank), e.g. rng_stream::derive(seed, "data.shuffle", rank). Streams are
// xoshiro256** generators seeded through SplitMix64 from a stable hash of the name, so the
// same (seed, name, rank) gives the same numbers on every machine and every run. The state
// is four words, saved in checkpoints for bit-exact resume.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace msomni {

class rng_stream {
 public:
  using result_type = uint64_t;
  using state_type = std::array<uint64_t, 4>;

  static rng_stream derive(uint64_t job_seed, std::string_view purpose, uint64_t rank = 0);
  static rng_stream from_state(const state_type& s);

  uint64_t next();
  uint64_t operator()() { return next(); }
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return UINT64_MAX; }

  double uniform();                      // [0, 1) with 53 random bits
  uint64_t below(uint64_t bound);        // [0, bound) without modulo bias; bound > 0
  float normal();                        // standard normal (Box-Muller, no cached spare)

  const state_type& state() const noexcept { return s_; }
  bool operator==(const rng_stream&) const = default;

 private:
  explicit rng_stream(const state_type& s) : s_(s) {}
  state_type s_{};
};

// FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211): a hash that is the same
// everywhere (std::hash is not).
inline constexpr uint64_t fnv1a_64_offset_basis = 14695981039346656037ull;
// `text` mixed into `h`: from the offset basis it is FNV-1a 64 of `text`; from an earlier
// result it goes on hashing as if the texts were one.
uint64_t fnv1a_64(std::string_view text, uint64_t h = fnv1a_64_offset_basis);
uint64_t stable_hash(std::string_view text);

}  // namespace msomni
