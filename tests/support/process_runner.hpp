// Runs a command line in a shell and captures its exit code and combined output; and a
// temporary directory removed when it goes out of scope.
#pragma once

#include "core/process.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace msomni::testing {

struct command_result {
  int exit_code = -1;
  std::string output;
};

inline command_result run_command(const std::string& command) {
  process::spawn_options o;
  o.out = process::stream::pipe();
  o.own_process_group = false;
  auto shell = process::spawn({"/bin/sh", "-c", command + " 2>&1"}, o);
  command_result r;
  r.output = process::read_to_end(shell.stdout_fd());
  r.exit_code = shell.wait()->shell_code();
  return r;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s;
}

class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "msomni-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace msomni::testing
