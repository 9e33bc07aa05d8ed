// secret_file (see secret_file.hpp).
#include "core/secret_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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
  // Readers poll this file (agents, ranks following their leader, the CLI): they must see the
  // old text or the new, never an empty or half-written one. So the text goes to a temporary
  // of this process's own (its pid in the name, created exclusively with mode 0600), is
  // fsynced and renamed over the file; removing the temporary after a failure removes nothing
  // else.
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string tmp = (slash == std::string::npos ? std::string{} : path.substr(0, slash + 1)) + "." +
                          path.substr(slash == std::string::npos ? 0 : slash + 1) + ".tmp-" +
                          std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path + " (temporary " + tmp + "): " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : err);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + why);
  }
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // the rename itself made durable; best effort where the directory cannot be opened
    ::close(dfd);
  }
}

void refuse_readable_by_others(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot read the token file " + path);
  if (st.st_mode & 077)
    throw std::runtime_error("the token file " + path + " can be read by others (chmod 600 it)");
}

std::string read_secret_file(const std::string& path) {
  refuse_readable_by_others(path);
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
