// The thin terminal side of `msomni inspect`: ncurses draws the lines render_screen made and
// hands back keys. Nothing here decides what is shown (inspect_model.hpp does). curses.h
// stays in the .cpp: its macros (timeout, erase, OK, ...) would leak into every includer.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace msomni::cli::inspect {

class curses_screen {
 public:
  static constexpr int no_key = -1;
  static constexpr int resized = -2;

  curses_screen();  // takes over the terminal
  ~curses_screen();  // gives it back as it was
  curses_screen(const curses_screen&) = delete;
  curses_screen& operator=(const curses_screen&) = delete;

  size_t width() const;
  size_t height() const;
  // Replaces the screen with `lines`; the first two (header, keys) in reverse video.
  void draw(const std::vector<std::string>& lines);
  // The next key pressed within `wait`, no_key when none, resized when the terminal changed size.
  int next_key(std::chrono::milliseconds wait);
};

}  // namespace msomni::cli::inspect
