// secret_file (see secret_file.hpp).
#include "core/secret_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace msomni {

std::string random_token() {
  unsigned char bytes[16] = {};
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && ::read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("cannot read /dev/urandom for a control token");
  std::string hex;
  for (unsigned char b : bytes) {
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

void write_private_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path);
  ::fchmod(fd, 0600);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

std::string read_secret_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot read the token file " + path);
  if (st.st_mode & 077)
    throw std::runtime_error("the token file " + path + " can be read by others (chmod 600 it)");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read the token file " + path);
  std::string text = ss.str();
  if (const auto open = text.find_first_not_of(" \t\r\n"); open != std::string::npos && text[open] == '{') {
    // A control.json: its "token" string; nothing when it is not a JSON object with one.
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    const auto token = doc.find("token");  // end() for anything but an object
    text = token != doc.end() && token->is_string() ? token->get<std::string>() : "";
  }
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (text.empty() || text.find_first_of(" \t\r\n") != std::string::npos)
    throw std::runtime_error("the token file " + path + " holds no token");
  return text;
}

std::string take_secret_env(const char* name) {
  const char* v = std::getenv(name);
  std::string out = v ? v : "";
  ::unsetenv(name);
  return out;
}

}  // namespace msomni
