// Named RNG streams (see rng.hpp).
#include "core/rng.hpp"

#include <cmath>

namespace msomni {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

uint64_t fnv1a_64(std::string_view text, uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t stable_hash(std::string_view text) { return fnv1a_64(text); }

rng_stream rng_stream::derive(uint64_t job_seed, std::string_view purpose, uint64_t rank) {
  // Mix the three inputs through SplitMix64 steps so nearby seeds/ranks decorrelate.
  uint64_t x = job_seed;
  uint64_t a = splitmix64(x) ^ stable_hash(purpose);
  uint64_t b = splitmix64(a) ^ (rank * 0xd1342543de82ef95ull + 0x632be59bd9b4e019ull);
  state_type s{};
  for (auto& w : s) w = splitmix64(b);
  if ((s[0] | s[1] | s[2] | s[3]) == 0) s[0] = 1;  // xoshiro's one forbidden state
  return rng_stream(s);
}

rng_stream rng_stream::from_state(const state_type& s) { return rng_stream(s); }

uint64_t rng_stream::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double rng_stream::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t rng_stream::below(uint64_t bound) {
  // Lemire's nearly-divisionless method.
  __uint128_t m = static_cast<__uint128_t>(next()) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<__uint128_t>(next()) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

float rng_stream::normal() {
  double u1 = uniform();
  const double u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace msomni
