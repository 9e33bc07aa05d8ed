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

// HOST:PORT with PORT a port number (0: any free one); attach it with Option::transform.
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
      "HOST:PORT");
}

// "PROGRAM: what went wrong" and where to look, for every parse error of `app`.
inline void use_program_errors(CLI::App& app) {
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
