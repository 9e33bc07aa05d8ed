// put_number / get_number (the one encoding of non-finite numbers in msomni's JSON) and json_text.
#include "core/json_number.hpp"
#include "core/json_text.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using msomni::get_number;
using msomni::put_number;

TEST_CASE("json_number: a finite value is a plain number and reads back") {
  nlohmann::json o = nlohmann::json::object();
  put_number(o, "loss", 2.5);
  CHECK(o.dump() == R"({"loss":2.5})");
  CHECK(get_number(o, "loss").value() == 2.5);
}

TEST_CASE("json_number: NaN and infinity are null with a flag that a strict parser accepts") {
  for (double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}) {
    nlohmann::json o = nlohmann::json::object();
    put_number(o, "loss", v);
    const std::string text = o.dump();
    CHECK(text == R"({"loss":null,"loss_nonfinite":true})");
    const auto back = nlohmann::json::parse(text);
    const auto got = get_number(back, "loss");
    REQUIRE(got.has_value());
    CHECK(std::isnan(*got));
  }
}

TEST_CASE("json_number: absent, unflagged null and non-number values read as nothing") {
  const auto o = nlohmann::json::parse(R"({"a":null,"b":"3","c":null,"c_nonfinite":false})");
  CHECK_FALSE(get_number(o, "a").has_value());
  CHECK_FALSE(get_number(o, "b").has_value());
  CHECK_FALSE(get_number(o, "c").has_value());
  CHECK_FALSE(get_number(o, "missing").has_value());
  CHECK_FALSE(get_number(nlohmann::json::array(), "a").has_value());
}

TEST_CASE("json_text: one compact line, and bytes that are not UTF-8 do not stop the write") {
  nlohmann::json o = nlohmann::json::object();
  o["path"] = std::string("a\"b\n\xff");
  CHECK(msomni::json_text(o) == "{\"path\":\"a\\\"b\\n\xef\xbf\xbd\"}");
}

TEST_CASE("json_number: ordered_json keeps the flag right after its value") {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  o["step"] = 3;
  put_number(o, "loss", std::numeric_limits<double>::quiet_NaN());
  o["lr"] = 0.5;
  CHECK(msomni::json_text(o) == R"({"step":3,"loss":null,"loss_nonfinite":true,"lr":0.5})");
  CHECK(std::isnan(get_number(o, "loss").value()));
}
