// Command lines of msomni's programs, all on CLI11 and all with the same rules: --help (and
// --version) print to stdout and exit 0; a bad command line prints "PROGRAM: FLAG: why" to
// stderr and exits 2; a number is written in decimal and must lie in its range, which for a
// flag that sets a config key is that key's limit (config/config_limits.hpp).
// Header only: a program that includes it links CLI11::CLI11.
#pragma once

#include "config/config_limits.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

namespace msomni::command_line {

inline constexpr int exit_ok = 0;
inline constexpr int exit_usage = 2;

// A number within [min, max]; attach it with Option::transform. It reads the text in
// decimal (CLI11 alone would take 010 as octal and -1 as the largest unsigned value) and
// rewrites it in canonical form for CLI11's own conversion to the option's type. NaN is
// never within a range.
template <class T>
CLI::Validator within(T min, T max) {
  static_assert(std::is_arithmetic_v<T>);
  std::ostringstream bounds;
  bounds << "[" << min << ", " << max << "]";
  const std::string desc = bounds.str();
  return CLI::Validator(
      [min, max, desc](std::string& text) -> std::string {
        T value{};
        const char* begin = text.data();
        const char* end = begin + text.size();
        const auto [stop, ec] = std::from_chars(begin, end, value);
        const char* kind = std::is_integral_v<T> ? "a whole number" : "a number";
        const bool minus = !text.empty() && text.front() == '-';
        if (ec == std::errc::result_out_of_range || (std::is_unsigned_v<T> && minus))
          return text + " is not in " + desc;
        if (ec != std::errc{} || stop != end || text.empty()) return "\"" + text + "\" is not " + kind;
        if (!(value >= min && value <= max)) return text + " is not in " + desc;
        if constexpr (std::is_integral_v<T>) text = std::to_string(value);
        return {};
      },
      desc);
}

template <class T>
CLI::Validator within(config::limits::range<T> limit) {
  return within(limit.min, limit.max);
}

// A numeric flag within `limit`, with its default shown in --help.
template <class T, class L>
CLI::Option* add_number(CLI::App& app, const std::string& flag, T& value, config::limits::range<L> limit,
                        const std::string& what) {
  return app.add_option(flag, value, what)->transform(within(limit))->capture_default_str();
}

// HOST:PORT with PORT a port number (0: any free one); attach it with Option::transform
// (and name the value with type_name("HOST:PORT")).
inline CLI::Validator host_port() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos || colon == 0) return "\"" + text + "\" is not HOST:PORT";
        std::string port = text.substr(colon + 1);
        if (auto why = within(config::limits::cluster::port)(port); !why.empty()) return "port " + why;
        text = text.substr(0, colon + 1) + port;
        return {};
      },
      "");
}

// `text` with its lines broken at spaces to at most `width` characters where a word allows.
inline std::string wrap_lines(const std::string& text, size_t width) {
  std::string out, line, word;
  std::istringstream lines(text);
  for (std::string paragraph; std::getline(lines, paragraph);) {
    if (!out.empty()) out += '\n';
    std::istringstream words(paragraph);
    line.clear();
    while (words >> word) {
      if (!line.empty() && line.size() + 1 + word.size() > width) {
        out += line + '\n';
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
    }
    out += line;
  }
  if (!text.empty() && text.back() == '\n') out += '\n';
  return out;
}

// CLI11's help layout with the description and the option descriptions wrapped to fit beside the option column.
class wrapping_formatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override {
    return wrap_lines(CLI::Formatter::make_description(app), line_width);
  }

  std::string make_footer(const CLI::App* app) const override {
    std::string footer = CLI::Formatter::make_footer(app);
    if (!footer.empty() && footer.back() != '\n') footer += '\n';
    return footer;
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    const size_t width = get_column_width() < line_width - 20 ? line_width - get_column_width() : 20;
    return wrap_lines(CLI::Formatter::make_option_desc(opt), width);
  }

 private:
  static constexpr size_t line_width = 100;
};

// The common conventions for `app`: every parse error as "PROGRAM: what went wrong" and
// where to look; help descriptions wrapped.
inline void set_conventions(CLI::App& app) {
  app.formatter(std::make_shared<wrapping_formatter>());
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return a->get_name() + ": " + e.what() + "\nRun '" + a->get_name() + " --help' for the options.\n";
  });
}

// A refusal after parsing (a rule between flags): the same form, exit 2.
inline int refuse(const CLI::App& app, const std::string& why, std::ostream& err = std::cerr) {
  err << app.get_name() << ": " << why << "\nRun '" << app.get_name() << " --help' for the options.\n";
  return exit_usage;
}

// The exit status for a parse error (help and version included); prints what CLI11 says.
inline int exit_status(const CLI::App& app, const CLI::ParseError& e, std::ostream& out = std::cout,
                       std::ostream& err = std::cerr) {
  return app.exit(e, out, err) == 0 ? exit_ok : exit_usage;
}

// Parses argv. nullopt: go on with the parsed values; otherwise exit with that status
// (0 after --help or --version, 2 for a bad command line), the text already printed.
inline std::optional<int> parse(CLI::App& app, int argc, const char* const* argv, std::ostream& out = std::cout,
                                std::ostream& err = std::cerr) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return exit_status(app, e, out, err);
  }
  return std::nullopt;
}

// The same for the arguments after a subcommand's name (program name not included).
inline std::optional<int> parse(CLI::App& app, std::vector<std::string> args, std::ostream& out = std::cout,
                                std::ostream& err = std::cerr) {
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return exit_status(app, e, out, err);
  }
  return std::nullopt;
}

}  // namespace msomni::command_line
