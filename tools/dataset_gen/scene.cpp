// Scene sampling, captions and a tiny rasteriser (see scene.hpp).
#include "scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace msomni::gen {
namespace {

constexpr std::array<const char*, 4> shapes = {"circle", "square", "triangle", "diamond"};
constexpr std::array<const char*, 6> colours = {"red", "green", "blue", "yellow", "white", "purple"};
constexpr std::array<std::array<uint8_t, 3>, 6> rgb_of = {{{220, 30, 30}, {30, 190, 40}, {40, 70, 230},
                                                           {235, 220, 40}, {245, 245, 245}, {150, 40, 190}}};
constexpr std::array<const char*, 3> backgrounds = {"black", "grey", "dark blue"};
constexpr std::array<std::array<uint8_t, 3>, 3> bg_rgb = {{{0, 0, 0}, {100, 100, 100}, {10, 20, 70}}};
constexpr std::array<const char*, 5> motions = {"still", "right", "left", "down", "up"};

const char* place(int cx, int cy) {
  static const char* names[3][3] = {{"top left", "top", "top right"},
                                    {"left", "center", "right"},
                                    {"bottom left", "bottom", "bottom right"}};
  return names[cy][cx];
}

bool inside(int shape, double dx, double dy, double r) {
  switch (shape) {
    case 0: return dx * dx + dy * dy <= r * r;
    case 1: return std::abs(dx) <= r * 0.85 && std::abs(dy) <= r * 0.85;
    case 2: return dy <= r * 0.8 && dy >= -r && std::abs(dx) <= (dy + r) * 0.55;
    default: return std::abs(dx) + std::abs(dy) <= r;
  }
}

}  // namespace

scene random_scene(rng_stream& rng, bool video) {
  scene s;
  s.shape = int(rng.below(shapes.size()));
  s.colour = int(rng.below(colours.size()));
  s.background = int(rng.below(backgrounds.size()));
  s.cell_x = int(rng.below(3));
  s.cell_y = int(rng.below(3));
  if (video) {
    s.motion = 1 + int(rng.below(4));
    // Start where the motion has room to show: moving right starts on the left, and so on.
    if (s.motion == 1) s.cell_x = 0;
    if (s.motion == 2) s.cell_x = 2;
    if (s.motion == 3) s.cell_y = 0;
    if (s.motion == 4) s.cell_y = 2;
  }
  return s;
}

std::string caption_of(const scene& s, bool video) {
  std::string c = std::string("a ") + colours[s.colour] + " " + shapes[s.shape];
  if (video && s.motion != 0)
    c += std::string(" moving ") + motions[s.motion] + " from the " + place(s.cell_x, s.cell_y);
  else
    c += std::string(" at the ") + place(s.cell_x, s.cell_y);
  return c + " on a " + backgrounds[s.background] + " background";
}

std::string random_text(rng_stream& rng) {
  static const char* relations[] = {"above", "below", "left of", "right of", "next to"};
  const auto a = rng.below(colours.size()), b = rng.below(colours.size());
  return std::string("the ") + colours[a] + " " + shapes[rng.below(shapes.size())] + " is " + relations[rng.below(5)] +
         " the " + colours[b] + " " + shapes[rng.below(shapes.size())] + ".";
}

void render(const scene& s, int size, int t, int frames, std::vector<uint8_t>& rgb) {
  rgb.resize(size_t(size) * size * 3);
  const double cell = size / 3.0;
  double cx = (s.cell_x + 0.5) * cell, cy = (s.cell_y + 0.5) * cell;
  // Over the clip the shape travels two cells in its direction.
  const double travel = frames > 1 ? 2.0 * cell * t / (frames - 1) : 0.0;
  if (s.motion == 1) cx += travel;
  if (s.motion == 2) cx -= travel;
  if (s.motion == 3) cy += travel;
  if (s.motion == 4) cy -= travel;
  const double r = cell * 0.4;
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const bool in = inside(s.shape, x + 0.5 - cx, y + 0.5 - cy, r);
      const auto& c = in ? rgb_of[s.colour] : bg_rgb[s.background];
      std::copy(c.begin(), c.end(), rgb.begin() + (size_t(y) * size + x) * 3);
    }
}

}  // namespace msomni::gen
