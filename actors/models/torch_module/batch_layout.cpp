// Micro-batches in shared memory (see batch_layout.hpp).
#include "torch_module/batch_layout.hpp"

#include "core/rng.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace msomni::models {

namespace {

int64_t aligned(int64_t n) { return (n + batch_field_alignment - 1) / batch_field_alignment * batch_field_alignment; }

template <class T>
void put(std::span<std::byte> memory, int64_t at, const T* data, size_t count) {
  if (count) std::memcpy(memory.data() + at, data, count * sizeof(T));
}

template <class T, class Allocator>
std::string_view bytes_of(const std::vector<T, Allocator>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

batch_layout layout_of(const model::micro_batch& mb) {
  const int64_t B = mb.batch, T = mb.text_len;
  batch_layout l;
  int64_t at = 0;
  l.patches = at;
  at = aligned(at + static_cast<int64_t>(mb.patches.size() * sizeof(float)));
  l.patch_counts = at;
  at = aligned(at + B * static_cast<int64_t>(sizeof(int32_t)));
  l.tokens = at;
  at = aligned(at + B * T * static_cast<int64_t>(sizeof(int32_t)));
  l.loss_mask = at;
  at = aligned(at + B * T);
  l.modalities = at;
  at = aligned(at + B);
  l.bytes = at;
  return l;
}

void write_batch(const model::micro_batch& mb, const batch_layout& l, std::span<std::byte> memory) {
  if (static_cast<int64_t>(memory.size()) < l.bytes)
    throw std::invalid_argument("write_batch: " + std::to_string(memory.size()) + " bytes of memory, the batch needs " +
                                std::to_string(l.bytes));
  static_assert(sizeof(modality) == 1);
  put(memory, l.patches, mb.patches.data(), mb.patches.size());
  put(memory, l.patch_counts, mb.patch_counts.data(), mb.patch_counts.size());
  put(memory, l.tokens, mb.tokens.data(), mb.tokens.size());
  put(memory, l.loss_mask, mb.loss_mask.data(), mb.loss_mask.size());
  put(memory, l.modalities, mb.modalities.data(), mb.modalities.size());
}

nlohmann::json describe_batch(const model::micro_batch& mb, const batch_layout& l) {
  return {{"dims", {mb.batch, mb.max_patches, mb.patch_dim, mb.text_len}},
          {"offsets",
           {{"patches", l.patches},
            {"patch_counts", l.patch_counts},
            {"tokens", l.tokens},
            {"loss_mask", l.loss_mask},
            {"modalities", l.modalities}}}};
}

uint64_t micro_batch_seed(uint64_t job_seed, int64_t optimizer_step, const model::micro_batch& mb) {
  // Not the micro-batch's place on its rank: a resize changes that while the micro-batches of
  // a step stay the same. The patches tell apart batches whose captions are the same.
  std::string key = "model.torch.forward/" + std::to_string(optimizer_step) + "/";
  key += bytes_of(mb.tokens);
  key += bytes_of(mb.patch_counts);
  key += bytes_of(mb.patches);
  auto stream = rng_stream::derive(job_seed, key);
  return stream.next() >> 1;
}

}  // namespace msomni::models
