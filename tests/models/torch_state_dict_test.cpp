// Reading the rest of a torch module's state_dict from its checkpoint blobs (buffers and tied
// names), as `msomni ckpt export` does, and refusing blobs that do not hold what they say.
#include "torch_module/torch_state_dict.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace msomni;

namespace {

// module_buffers.py's form: u64 header length, the JSON header, the data.
std::vector<uint8_t> buffers_blob(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("a torch/buffers blob gives each buffer with its dtype, shape and bytes") {
  const std::vector<uint8_t> data = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 63, 7};
  const auto blob = buffers_blob(R"({"buffers": [{"name": "bn.num_batches_tracked", "dtype": "I64", "shape": [], "offset": 0, "bytes": 8},
    {"name": "bn.running_mean", "dtype": "F32", "shape": [1], "offset": 8, "bytes": 4},
    {"name": "flags", "dtype": "U8", "shape": [1, 1], "offset": 12, "bytes": 1}]})",
                                 data);
  const auto b = models::read_torch_buffers(blob);
  REQUIRE(b.size() == 3);
  CHECK(b[0].name == "bn.num_batches_tracked");
  CHECK(b[0].dtype == "I64");
  CHECK(b[0].shape.empty());
  CHECK(b[0].bytes == std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0});
  float mean = 0;
  std::memcpy(&mean, b[1].bytes.data(), 4);
  CHECK(mean == 1.0f);
  CHECK(b[2].shape == std::vector<int64_t>{1, 1});
  CHECK(models::read_torch_buffers(buffers_blob(R"({"buffers": []})", {})).empty());
}

TEST_CASE("a torch/buffers blob that does not hold what it says is refused, saying why") {
  CHECK_THROWS_WITH_AS(models::read_torch_buffers(std::vector<uint8_t>{1, 2}), doctest::Contains("truncated"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(models::read_torch_buffers(buffers_blob("[1]", {})), doctest::Contains("is not {\"buffers\""),
                       std::invalid_argument);
  auto blob = buffers_blob(R"({"buffers": []})", {});
  blob[0] = 200;  // a header longer than the blob
  CHECK_THROWS_WITH_AS(models::read_torch_buffers(blob), doctest::Contains("a header of 200 bytes"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      models::read_torch_buffers(buffers_blob(R"({"buffers": [{"name": "x", "dtype": "Q8", "shape": [1], "offset": 0, "bytes": 1}]})", {0})),
      doctest::Contains("dtype Q8"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      models::read_torch_buffers(buffers_blob(R"({"buffers": [{"name": "x", "dtype": "F32", "shape": [2], "offset": 0, "bytes": 4}]})",
                                              {0, 0, 0, 0})),
      doctest::Contains("its shape and dtype make 8"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      models::read_torch_buffers(buffers_blob(R"({"buffers": [{"name": "x", "dtype": "F32", "shape": [1], "offset": 2, "bytes": 4}]})",
                                              {0, 0, 0, 0})),
      doctest::Contains("lies past the data"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(models::read_torch_buffers(buffers_blob(R"({"buffers": [{"name": "x"}]})", {})),
                       doctest::Contains("lacks a field"), std::invalid_argument);
}

TEST_CASE("a model/torch_aliases blob maps each tied name to its parameter") {
  CHECK(models::read_torch_aliases(bytes_of(R"({"lm_head.weight": "tok_emb.weight"})")) ==
        std::map<std::string, std::string>{{"lm_head.weight", "tok_emb.weight"}});
  CHECK_THROWS_AS(models::read_torch_aliases(bytes_of(R"({"a": 1})")), std::invalid_argument);
  CHECK_THROWS_AS(models::read_torch_aliases(bytes_of("not json")), std::invalid_argument);
  CHECK(models::dtype_bytes("BF16") == 2);
  CHECK(models::dtype_bytes("F8") == 0);
}
