// Shard patterns in a source's uri: braces expand (lists, zero-padded ranges, nested), globs
// match file names, and the storage lists the matching .tar files sorted and once each.
#include "core/shard_pattern.hpp"
#include "data_test_support.hpp"
#include "storage.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace msomni;
namespace fs = std::filesystem;
using strings = std::vector<std::string>;

TEST_CASE("braces expand comma lists and integer ranges in written order") {
  CHECK(shard_pattern::expand_braces("a.tar") == strings{"a.tar"});
  CHECK(shard_pattern::expand_braces("x-{b,a}.tar") == strings{"x-b.tar", "x-a.tar"});
  CHECK(shard_pattern::expand_braces("s{8..10}") == strings{"s8", "s9", "s10"});
  CHECK(shard_pattern::expand_braces("s{08..10}") == strings{"s08", "s09", "s10"});
  CHECK(shard_pattern::expand_braces("s{000..002}") == strings{"s000", "s001", "s002"});
  CHECK(shard_pattern::expand_braces("s{2..0}") == strings{"s2", "s1", "s0"});
  CHECK(shard_pattern::expand_braces("{a,b}{0..1}") == strings{"a0", "a1", "b0", "b1"});
  CHECK(shard_pattern::expand_braces("{a,b{1,2}}") == strings{"a", "b1", "b2"});
  CHECK(shard_pattern::is_pattern("shard-00000?.tar"));
  CHECK(shard_pattern::is_pattern("shard-{0..3}.tar"));
  CHECK_FALSE(shard_pattern::is_pattern("/data/shards"));
}

TEST_CASE("malformed braces are refused with the reason") {
  auto why = [](const char* p) {
    try {
      shard_pattern::expand_braces(p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(why("shard-{0..3.tar").find("unclosed '{'") != std::string::npos);
  CHECK(why("shard-0..3}.tar").find("unmatched '}'") != std::string::npos);
  CHECK(why("shard-{}.tar").find("neither a list") != std::string::npos);
  CHECK(why("shard-{abc}.tar").find("neither a list") != std::string::npos);
  CHECK(why("shard-{a..c}.tar").find("whole numbers") != std::string::npos);
  CHECK(why("shard-{0..999999}.tar").find("more than") != std::string::npos);
  CHECK(why("shard-{0..3}.tar") == "accepted");
}

TEST_CASE("list_shards takes glob and brace patterns on the file name, sorted and once each") {
  testing::temp_dir dir;
  const fs::path d = dir.path() / "shards";
  fs::create_directories(d / "sub");
  for (int i = 0; i < 12; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "shard-%06d.tar", i);
    std::ofstream(d / name) << "x";
  }
  std::ofstream(d / "shard-000001.txt") << "not a shard";
  std::ofstream(d / ".shard-000002.tar") << "hidden";
  std::ofstream(d / "sub" / "shard-000003.tar") << "deeper";
  const auto st = data::make_local_storage();
  auto names = [&](const std::string& uri) {
    strings out;
    for (const auto& p : st->list_shards(uri)) out.push_back(fs::path(p).filename().string());
    return out;
  };
  const std::string base = d.string() + "/";
  CHECK(names(base + "shard-00000?.tar").size() == 10);
  CHECK(names(base + "shard-00000?.tar").front() == "shard-000000.tar");
  CHECK(names(base + "shard-00001[01].tar") == strings{"shard-000010.tar", "shard-000011.tar"});
  CHECK(names(base + "*.tar").size() == 12);  // not the hidden one, not the .txt, not sub/
  CHECK(names(base + "shard-{000003,000001}.tar") == strings{"shard-000001.tar", "shard-000003.tar"});
  CHECK(names(base + "shard-{000009..000011}.tar") == strings{"shard-000009.tar", "shard-000010.tar", "shard-000011.tar"});
  CHECK(names(base + "shard-{000001,000001,00000[01]}.tar") == strings{"shard-000000.tar", "shard-000001.tar"});
  CHECK(names("file://" + base + "shard-00000[0-1].tar") == strings{"shard-000000.tar", "shard-000001.tar"});
  CHECK(names(base + "shard-{000020..000021}.tar").empty());  // names that do not exist
  CHECK(names(base + "nothing-*.tar").empty());
  CHECK(names(dir.path().string() + "/missing/*.tar").empty());
  CHECK_THROWS_AS(st->list_shards(base + "shard-{0.tar"), std::invalid_argument);
  CHECK_THROWS_AS(st->list_shards(dir.path().string() + "/*/shard-000000.tar"), std::invalid_argument);
  // Plain directories and files are as before: a directory lists every .tar directly in it.
  CHECK(names(d.string()).size() == 13);
  CHECK(names(base + "shard-000004.tar") == strings{"shard-000004.tar"});
}
