// What the dataset generator draws: one coloured shape on a plain background, placed in a
// 3x3 grid cell, optionally moving, with a caption that states exactly that. Learnable on
// purpose: the caption is a function of the pixels, so a small model can fit it.
#pragma once

#include "core/rng.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace msomni::gen {

struct scene {
  int shape = 0;        // index into shape names
  int colour = 0;       // index into colour names
  int background = 0;   // index into background names
  int cell_x = 1, cell_y = 1;  // 0..2 grid cell of the start position
  int motion = 0;       // 0 still, 1 right, 2 left, 3 down, 4 up (videos only)
};

// Draws a random scene; `video` allows motion.
scene random_scene(rng_stream& rng, bool video);
// "a red circle at the top left" / "a blue square moving right from the center".
std::string caption_of(const scene& s, bool video);
// A caption-only sample: a sentence relating two shapes, for text-only training.
std::string random_text(rng_stream& rng);

// Renders frame `t` of `frames` (RGB24, size x size). Still scenes ignore t.
void render(const scene& s, int size, int t, int frames, std::vector<uint8_t>& rgb);

}  // namespace msomni::gen
