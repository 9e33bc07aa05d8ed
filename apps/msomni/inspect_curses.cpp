// curses_screen (see inspect_curses.hpp).
#include "inspect_curses.hpp"

#include <curses.h>

#include <algorithm>

namespace msomni::cli::inspect {

curses_screen::curses_screen() {
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
}

curses_screen::~curses_screen() { endwin(); }

size_t curses_screen::width() const { return static_cast<size_t>(std::max(0, COLS)); }
size_t curses_screen::height() const { return static_cast<size_t>(std::max(0, LINES)); }

void curses_screen::draw(const std::vector<std::string>& lines) {
  erase();
  const int rows = std::min<int>(LINES, static_cast<int>(lines.size()));
  for (int y = 0; y < rows; ++y) {
    const bool heading = y < 2 && lines.size() > 1;
    if (heading) attron(A_REVERSE);
    mvaddnstr(y, 0, lines[static_cast<size_t>(y)].c_str(), COLS);
    if (heading) attroff(A_REVERSE);
  }
  refresh();
}

int curses_screen::next_key(std::chrono::milliseconds wait) {
  timeout(static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, wait.count())));
  const int key = getch();
  if (key == ERR) return no_key;
  if (key == KEY_RESIZE) return resized;
  return key;
}

}  // namespace msomni::cli::inspect
