// synthetic_source (see synthetic_source.hpp).
#include "synthetic_source.hpp"

#include "model/text_tokens.hpp"

#include <array>
#include <cstring>
#include <stdexcept>

namespace msomni::rank_worker {

namespace {

struct colour {
  const char* name;
  std::array<float, 3> rgb;
};
constexpr std::array<colour, 6> colours{{{"red", {0.9f, 0.1f, 0.1f}},
                                          {"green", {0.1f, 0.8f, 0.2f}},
                                          {"blue", {0.1f, 0.2f, 0.9f}},
                                          {"yellow", {0.9f, 0.9f, 0.1f}},
                                          {"white", {0.95f, 0.95f, 0.95f}},
                                          {"purple", {0.6f, 0.1f, 0.7f}}}};
constexpr std::array<const char*, 4> corners{"top left", "top right", "bottom left", "bottom right"};

// Paints one frame (channel-last RGB patches) with a square of `side` pixels at (y0, x0).
void paint(float* frame, int64_t image, int64_t patch, const colour& c, int64_t y0, int64_t x0, int64_t side) {
  const int64_t per_row = image / patch;
  for (int64_t y = 0; y < image; ++y)
    for (int64_t x = 0; x < image; ++x) {
      const bool in = y >= y0 && y < y0 + side && x >= x0 && x < x0 + side;
      const int64_t p = (y / patch) * per_row + x / patch;
      float* px = frame + (p * patch * patch + (y % patch) * patch + (x % patch)) * 3;
      for (int ch = 0; ch < 3; ++ch) px[ch] = in ? c.rgb[static_cast<size_t>(ch)] : 0.05f;
    }
}

}  // namespace

synthetic_source::synthetic_source(const config::job_config& cfg, data_slot slot,
                                   std::shared_ptr<std::pmr::memory_resource> batch_memory)
    : model_(cfg.model),
      sources_(cfg.data.sources),
      micro_batch_(cfg.training.micro_batch),
      batch_memory_(std::move(batch_memory)),
      seed_(static_cast<uint64_t>(cfg.training.seed)),
      slot_(slot) {
  check_slot(slot);
  for (const auto& s : sources_) {
    if (s.uri.rfind("synthetic://", 0) != 0)
      throw std::invalid_argument("synthetic_source: data source \"" + s.name + "\" is " + s.uri +
                                  ", not synthetic://");
    total_weight_ += s.weight;
  }
  const int64_t per_frame = (model_.image_size / model_.patch_size) * (model_.image_size / model_.patch_size);
  text_len_ = std::min<int64_t>(48, model_.max_seq_len - per_frame * model_.video_frames);
  if (text_len_ < 8)
    throw std::invalid_argument("synthetic_source: model.max_seq_len leaves " + std::to_string(text_len_) +
                                " text positions after the patches (need >= 8)");
}

void synthetic_source::check_slot(const data_slot& slot) const {
  if (slot.world == 0 || slot.rank >= slot.world || slot.grad_accum < 1 || slot.micro_batch != micro_batch_)
    throw std::invalid_argument("synthetic_source: unusable slot (rank " + std::to_string(slot.rank) + " of " +
                                std::to_string(slot.world) + ", grad_accum " + std::to_string(slot.grad_accum) +
                                ", micro_batch " + std::to_string(slot.micro_batch) + ")");
}

void synthetic_source::reslot(const data_slot& slot) {
  if (micro_ != 0) throw std::logic_error("synthetic_source: reslot inside an optimizer step");
  check_slot(slot);
  slot_ = slot;
}

model::micro_batch synthetic_source::next() {
  const uint64_t first = step_base_ + static_cast<uint64_t>((micro_ * slot_.world + slot_.rank) * micro_batch_);
  if (++micro_ == slot_.grad_accum) {
    micro_ = 0;
    step_base_ += static_cast<uint64_t>(slot_.global_batch());
  }
  model::micro_batch mb{.patches = std::pmr::vector<float>(batch_memory_or_default(batch_memory_)),
                        .patch_counts = {}, .tokens = {}, .loss_mask = {}, .modalities = {}};
  const int64_t per_frame = (model_.image_size / model_.patch_size) * (model_.image_size / model_.patch_size);
  mb.batch = micro_batch_;
  mb.max_patches = per_frame * model_.video_frames;
  mb.patch_dim = model_.patch_size * model_.patch_size * 3;
  mb.text_len = text_len_;
  mb.patches.assign(static_cast<size_t>(mb.batch * mb.max_patches * mb.patch_dim), 0.0f);
  for (int64_t b = 0; b < mb.batch; ++b) {
    auto rng = rng_stream::derive(seed_ ^ ((first + static_cast<uint64_t>(b)) * 0x9e3779b97f4a7c15ull),
                                  "data.synthetic", 0);
    draw_sample(mb, b, rng);
  }
  return mb;
}

void synthetic_source::draw_sample(model::micro_batch& mb, int64_t b, rng_stream& rng) const {
  double pick = rng.uniform() * total_weight_;
  const config::data_source* src = &sources_.back();
  for (const auto& s : sources_) {
    if (pick < s.weight) {
      src = &s;
      break;
    }
    pick -= s.weight;
  }
  const auto& c = colours[rng.below(colours.size())];
  const int64_t image = model_.image_size, patch = model_.patch_size, side = image / 2;
  const int64_t per_frame = (image / patch) * (image / patch);
  std::string caption;
  int32_t count = 0;
  if (src->kind == modality::text) {
    caption = std::string("the colour ") + c.name;
  } else if (src->kind == modality::image) {
    const size_t corner = rng.below(corners.size());
    const int64_t y0 = corner < 2 ? 0 : image - side, x0 = corner % 2 == 0 ? 0 : image - side;
    paint(mb.patches.data() + b * mb.max_patches * mb.patch_dim, image, patch, c, y0, x0, side);
    count = static_cast<int32_t>(per_frame);
    caption = std::string("a ") + c.name + " square at the " + corners[corner];
  } else {
    const int64_t y0 = static_cast<int64_t>(rng.below(static_cast<uint64_t>(image - side + 1)));
    for (int64_t f = 0; f < model_.video_frames; ++f) {
      const int64_t x0 = std::min<int64_t>(f * patch, image - side);
      paint(mb.patches.data() + (b * mb.max_patches + f * per_frame) * mb.patch_dim, image, patch, c, y0, x0, side);
    }
    count = static_cast<int32_t>(per_frame * model_.video_frames);
    caption = std::string("a ") + c.name + " square moving right";
  }
  mb.patch_counts.push_back(count);
  mb.modalities.push_back(src->kind);
  const auto tokens = model::encode_text(caption, text_len_);
  const auto mask = model::text_loss_mask(tokens);
  mb.tokens.insert(mb.tokens.end(), tokens.begin(), tokens.end());
  mb.loss_mask.insert(mb.loss_mask.end(), mask.begin(), mask.end());
}

std::vector<uint8_t> synthetic_source::save_state() const {
  if (micro_ != 0) throw std::logic_error("synthetic_source: save_state inside an optimizer step");
  std::vector<uint8_t> out(sizeof step_base_);
  std::memcpy(out.data(), &step_base_, sizeof step_base_);
  return out;
}

void synthetic_source::restore_state(std::span<const uint8_t> bytes) {
  if (bytes.size() != sizeof step_base_)
    throw std::invalid_argument("synthetic_source: state has " + std::to_string(bytes.size()) +
                                " bytes, expected " + std::to_string(sizeof step_base_));
  std::memcpy(&step_base_, bytes.data(), sizeof step_base_);
  micro_ = 0;
}

}  // namespace msomni::rank_worker
