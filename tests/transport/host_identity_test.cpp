// Which members may take the same-host path: every record well formed, offering its page,
// and naming one kernel boot, one pid namespace and one user.
#include "collectives/host_identity.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace msomni::transport;

namespace {

host_identity member(int pid) {
  host_identity id;
  std::strcpy(id.boot_id.data(), "0b6f1c8e-58b4-4d5f-a3d2-5f6a1d4e9c11");
  id.pid_namespace = 4026531836;
  id.uid = 1000;
  id.pid = pid;
  id.page_fd = 7;
  return id;
}

}  // namespace

TEST_CASE("members of one boot, pid namespace and user share a host") {
  std::vector<host_identity> ids{member(100), member(200), member(300)};
  CHECK(share_one_host(ids));
}

TEST_CASE("any difference, or one member without a page, keeps every member on UCX") {
  std::vector<host_identity> ids{member(100), member(200)};
  SUBCASE("another boot (another host, or a reboot)") { ids[1].boot_id[0] = '1'; }
  SUBCASE("another pid namespace (a container)") { ids[1].pid_namespace += 1; }
  SUBCASE("another user") { ids[1].uid = 0; }
  SUBCASE("no control page offered") { ids[0].page_fd = -1; }
  SUBCASE("an unknown record layout") { ids[1].magic ^= 1; }
  SUBCASE("no boot id read") { ids[0].boot_id.fill('\0'), ids[1].boot_id.fill('\0'); }
  SUBCASE("a boot id that fills the field (no terminator)") {
    ids[0].boot_id.fill('a'), ids[1].boot_id.fill('a');
  }
  CHECK_FALSE(share_one_host(ids));
}

TEST_CASE("this process's own record matches itself") {
  const auto me = this_process_identity(5, 42, 4096);
  CHECK(me.page_fd == 5);
  CHECK(me.page_token == 42);
  CHECK(me.token_address == 4096);
  std::vector<host_identity> ids{me, me};
  CHECK(share_one_host(ids));
  CHECK_FALSE(share_one_host(std::vector<host_identity>{}));
}
