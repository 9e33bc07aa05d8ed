// The message catalog: every type round-trips through CAF's binary serializer inside a
// type-erased caf::message (which needs registration), and every message struct declared in
// runtime/messages has a type ID (so none can be added without registration).
#include "runtime/catalog_samples.hpp"
#include "support/caf_test_fixture.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace {

using msomni::testing::sample;
using msomni::testing::tag;

template <class T>
bool round_trips(caf::actor_system& sys, std::string& error) {
  const T original = sample(tag<T>{});
  caf::message out = caf::make_message(original);
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(out)) {
    error = sys.render(err);
    return false;
  }
  caf::message in;
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(in)) {
    error = sys.render(err);
    return false;
  }
  if (!in.match_elements<T>()) {
    error = "wrong type after round trip";
    return false;
  }
  if (!(in.get_as<T>(0) == original)) {
    error = "value changed in round trip";
    return false;
  }
  return true;
}

template <caf::type_id_t... Is>
void check_all(caf::actor_system& sys, std::integer_sequence<caf::type_id_t, Is...>) {
  constexpr auto begin = caf::id_block::msomni::begin;
  auto one = [&](auto id) {
    using T = typename caf::type_by_id<decltype(id)::value>::type;
    const std::string name = caf::type_name_by_id<decltype(id)::value>::value;
    CAPTURE(name);
    CHECK(sys.types().portable_name(0, &typeid(T)) == name);
    std::string error;
    CHECK_MESSAGE(round_trips<T>(sys, error), error);
  };
  (one(std::integral_constant<caf::type_id_t, begin + Is>{}), ...);
}

template <class T>
std::string unregistered_failure() {
  caf::actor_system_config cfg;  // no register_catalog
  cfg.set("scheduler.policy", caf::atom("testing"));
  caf::actor_system sys{cfg};
  std::string error;
  round_trips<T>(sys, error);
  return error;
}

std::set<std::string> declared_message_structs() {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  const std::regex inspect_re(R"(inspect\(Inspector& f, (\w+)& x\))");
  for (const auto& entry : fs::directory_iterator(fs::path(MSOMNI_SOURCE_DIR) / "runtime/messages")) {
    if (entry.path().extension() != ".hpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const auto s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), inspect_re), end; it != end; ++it)
      names.insert("msomni::msg::" + (*it)[1].str());
  }
  return names;
}

template <caf::type_id_t... Is>
std::set<std::string> catalog_names(std::integer_sequence<caf::type_id_t, Is...>) {
  constexpr auto begin = caf::id_block::msomni::begin;
  return {caf::type_name_by_id<begin + Is>::value...};
}

using catalog_ids = std::make_integer_sequence<caf::type_id_t, msomni::catalog_size>;

}  // namespace

TEST_CASE_FIXTURE(msomni::testing::caf_test_fixture,
                  "every catalog type round-trips through the binary serializer") {
  CHECK(msomni::catalog_size >= 18);
  check_all(sys, catalog_ids{});
}

TEST_CASE("without registration the round trip fails, so the test above can fail") {
  const auto error = unregistered_failure<msomni::msg::heartbeat>();
  CHECK_FALSE(error.empty());
  MESSAGE("unregistered: " << error);
}

TEST_CASE("every message struct declared in runtime/messages is in the catalog") {
  const auto declared = declared_message_structs();
  const auto listed = catalog_names(catalog_ids{});
  CHECK(declared.size() >= 18);
  for (const auto& d : declared) {
    CAPTURE(d);
    CHECK_MESSAGE(listed.count(d) == 1, "declared with inspect() but missing from catalog.hpp");
  }
  CHECK(declared == listed);
}
