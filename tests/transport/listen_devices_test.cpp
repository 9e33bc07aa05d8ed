// Where UCX may listen (UCX_NET_DEVICES from a node's listen_host), the local address
// towards a peer, and how the job's token is written to and read from a file or the environment.
#include "core/secret_file.hpp"
#include "support/process_runner.hpp"
#include "ucx/ucx_node_impl.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

using namespace msomni;
using namespace msomni::transport;

namespace {

// The first IPv4 address of a non-loopback interface, with the interface's name.
std::optional<std::pair<std::string, std::string>> external_address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::pair<std::string, std::string>> out;
  for (auto* i = list; i && !out; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto& a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) == 127) continue;
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a, ip, sizeof ip);
    out = std::pair{std::string(ip), std::string(i->ifa_name)};
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace

TEST_CASE("UCX may use loopback alone for a loopback node, and the listen address's interface besides") {
  CHECK(ucx_net_devices_for("127.0.0.1") == "lo");
  CHECK(ucx_net_devices_for("127.0.0.2") == "lo");
  CHECK(ucx_net_devices_for("0.0.0.0").empty());  // asked to listen everywhere
  CHECK_THROWS_AS(ucx_net_devices_for("203.0.113.77"), std::invalid_argument);  // no interface has it
  CHECK_THROWS_AS(ucx_net_devices_for("localhost"), std::invalid_argument);
  CHECK(local_address_towards("127.0.0.1") == "127.0.0.1");
  if (const auto ext = external_address()) {
    CHECK(ucx_net_devices_for(ext->first) == "lo," + ext->second);
    CHECK(local_address_towards(ext->first) == ext->first);
  } else {
    MESSAGE("no external IPv4 interface here: the interface case is not exercised");
  }
}

TEST_CASE("the job's token comes from a private file (plain or control.json) or the environment") {
  testing::temp_dir dir;
  const auto write_private = [&](const std::string& name, const std::string& text) {
    const auto p = dir.write(name, text);
    ::chmod(p.c_str(), 0600);
    return p;
  };
  CHECK(read_secret_file(write_private("plain", "  abc123\n")) == "abc123");
  const nlohmann::json control{{"address", "127.0.0.1:5"}, {"token", "f00d"}, {"pid", 1}};
  CHECK(read_secret_file(write_private("control.json", control.dump() + "\n")) == "f00d");
  CHECK(read_secret_file(write_private("pretty.json", control.dump(2))) == "f00d");
  CHECK_THROWS_WITH(read_secret_file(write_private("no-token.json", R"({"address":"127.0.0.1:5"})")),
                    doctest::Contains("holds no token"));
  CHECK_THROWS_WITH(read_secret_file(write_private("torn.json", R"({"address":"127.0.0.1:5","token":"f0)")),
                    doctest::Contains("holds no token"));
  CHECK_THROWS_WITH(read_secret_file(write_private("empty", "\n")), doctest::Contains("holds no token"));
  CHECK_THROWS_WITH(read_secret_file(dir.write("open", "abc\n")), doctest::Contains("can be read by others"));
  CHECK_THROWS_WITH(read_secret_file((dir.path() / "missing").string()), doctest::Contains("cannot read"));
  ::setenv("MSOMNI_TEST_SECRET", "s3", 1);
  CHECK(take_secret_env("MSOMNI_TEST_SECRET") == "s3");
  CHECK(std::getenv("MSOMNI_TEST_SECRET") == nullptr);  // not inherited by what we start
  CHECK(take_secret_env("MSOMNI_TEST_SECRET").empty());
}

TEST_CASE("a private file is replaced whole: a reader racing its rewrites never sees it empty or torn") {
  testing::temp_dir dir;
  const auto path = (dir.path() / "control.json").string();
  const auto text_of = [](int i) { return nlohmann::json{{"address", "127.0.0.1:" + std::to_string(i)}, {"token", "f00d"}}.dump() + "\n"; };
  write_private_file(path, text_of(0));
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; i <= 2000; ++i) write_private_file(path, text_of(i));
    done = true;
  });
  int reads = 0, torn = 0;
  while (!done || reads < 2000) {
    std::ifstream in(path);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    torn += doc.is_discarded() || !doc.contains("token");
    ++reads;
  }
  writer.join();
  CHECK(torn == 0);
  CHECK(read_secret_file(path) == "f00d");
  struct stat st{};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 1);  // no temporary left beside it
  CHECK_THROWS_WITH(write_private_file((dir.path() / "missing" / "x").string(), "t"), doctest::Contains("cannot write"));
}
