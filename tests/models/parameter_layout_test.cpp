// model::parameter_layout: tensors declared in order become contiguous slices of one flat
// buffer; bad declarations are refused with the tensor's name.
#include "model/parameter_layout.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace msomni;

TEST_CASE("parameter_layout: offsets follow the declarations, slices cut the flat buffer") {
  model::parameter_layout l;
  CHECK(l.add("embed", {4, 3}, true) == 0);
  CHECK(l.add("out.w", {3, 4}, true) == 12);
  CHECK(l.add("out.b", {4}, false) == 24);
  CHECK(l.total == 28);
  REQUIRE(l.params.size() == 3);
  CHECK(l.params[2].name == "out.b");
  CHECK(l.params[2].size == 4);
  CHECK_FALSE(l.params[2].weight_decay);
  REQUIRE(l.find("out.w") != nullptr);
  CHECK(l.find("out.w")->offset == 12);
  CHECK(l.find("nope") == nullptr);
  std::vector<float> flat(static_cast<size_t>(l.total));
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = float(i);
  const auto b = model::parameter_layout::slice(std::span<float>(flat), l.params[2]);
  CHECK(b.size() == 4);
  CHECK(b.front() == 24.0f);
}

TEST_CASE("parameter_layout refuses a name twice, an empty name and a non-positive dimension") {
  model::parameter_layout l;
  l.add("w", {2, 2}, true);
  CHECK_THROWS_WITH_AS(l.add("w", {2}, false), doctest::Contains("tensor 'w' is declared twice"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(l.add("", {2}, false), doctest::Contains("needs a name"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(l.add("b", {0}, false), doctest::Contains("tensor 'b' has dimension 0"), std::invalid_argument);
  CHECK(l.total == 4);  // nothing refused was added
  CHECK(l.params.size() == 1);
}
