// model/flat_state.hpp and model/host_model.hpp: a host_model's state (the installed
// example's byte bigram model) round-trips and resumes bit-exactly; a wrong checkpoint is
// refused naming the entry and changes nothing; fuyu-tiny's state keeps its entry names and
// order, so its earlier checkpoints still load.
#include "byte_bigram_model.hpp"
#include "fuyu_tiny/fuyu_tiny.hpp"
#include "model/flat_state.hpp"
#include "square_batches.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace msomni;

namespace {

model::model_context bigram_context(uint64_t seed) {
  return model::model_context{test::tiny_model_config(), seed, model::compute_device::cpu, 0, 1};
}

double train_step(model::trainable_model& m, const model::micro_batch& mb) {
  m.zero_gradients();
  const double loss = m.forward_backward(mb, 1.0f).loss;
  model::optimizer_settings s;
  s.lr = 1e-2;
  REQUIRE_FALSE(m.optimizer_step(s).skipped);
  return loss;
}

std::vector<float> parameters_of(model::trainable_model& m) {
  std::vector<float> out(static_cast<size_t>(m.parameter_count()));
  m.copy_to_host(model::buffer_role::parameters, out);
  return out;
}

}  // namespace

TEST_CASE("host_model: state saves parameters, both moments and the step, and resumes bit-exactly") {
  test::square_batches data(test::tiny_model_config(), 4, 24, 3);
  std::vector<model::micro_batch> batches;
  for (int i = 0; i < 6; ++i) batches.push_back(data.next());
  examples::byte_bigram a(bigram_context(3), 8, 0.1f, "bigram");
  for (int i = 0; i < 3; ++i) train_step(a, batches[i]);
  const auto saved = a.save_state();
  CHECK(saved.tensors.size() == 9);
  CHECK(saved.tensors[0].name == "param/embed");
  CHECK(saved.tensors[3].name == "adam_m/embed");
  CHECK(saved.tensors[8].name == "adam_v/out.b");
  int64_t step = 0;
  REQUIRE(saved.get_int64("optimizer/step", step));
  CHECK(step == 3);
  CHECK(saved.find_blob("model/signature") == nullptr);  // the example declares none

  std::vector<double> continued, resumed;
  for (int i = 3; i < 6; ++i) continued.push_back(train_step(a, batches[i]));
  examples::byte_bigram b(bigram_context(99), 8, 0.1f, "bigram");
  b.load_state(saved);
  CHECK(b.optimizer_steps() == 3);
  for (int i = 3; i < 6; ++i) resumed.push_back(train_step(b, batches[i]));
  CHECK(resumed == continued);
  CHECK(parameters_of(b) == parameters_of(a));
}

TEST_CASE("host_model refuses a wrong checkpoint naming the entry and keeps its state") {
  examples::byte_bigram m(bigram_context(4), 8, 0.1f, "bigram");
  const auto before = m.save_state();
  const auto params = parameters_of(m);
  examples::byte_bigram other(bigram_context(5), 8, 0.1f, "bigram");
  const auto good = other.save_state();

  auto missing = good;
  missing.tensors.erase(missing.tensors.begin() + 4);  // adam_m/out.w
  CHECK_THROWS_WITH_AS(m.load_state(missing), "bigram load_state: missing tensor 'adam_m/out.w'", std::invalid_argument);
  auto short_tensor = good;
  short_tensor.tensors[8].values.pop_back();
  CHECK_THROWS_WITH_AS(m.load_state(short_tensor), "bigram load_state: tensor 'adam_v/out.b' has 259 values, expected 260",
                       std::invalid_argument);
  auto no_step = good;
  no_step.blobs.clear();
  CHECK_THROWS_WITH_AS(m.load_state(no_step), "bigram load_state: missing or mis-sized blob 'optimizer/step'",
                       std::invalid_argument);
  examples::byte_bigram wide(bigram_context(5), 16, 0.1f, "bigram");
  CHECK_THROWS_WITH_AS(m.load_state(wide.save_state()), doctest::Contains("'param/embed' has 4160 values, expected 2080"),
                       std::invalid_argument);
  CHECK(parameters_of(m) == params);
  CHECK(m.optimizer_steps() == 0);
  CHECK(m.save_state().tensors.size() == before.tensors.size());
}

TEST_CASE("read_flat_state checks the signature first when the model has one") {
  model::parameter_layout l;
  l.add("w", {2}, true);
  const std::vector<float> zeros(2, 0.0f);
  const auto st = model::save_flat_state(l, {zeros, zeros, zeros}, 7, "toy width=2");
  CHECK(st.blobs.back().name == "model/signature");
  CHECK(model::read_flat_state(l, st, "toy", "toy width=2").step == 7);
  CHECK_THROWS_WITH_AS(model::read_flat_state(l, st, "toy", "toy width=4"),
                       "toy load_state: checkpoint is of 'toy width=2', this model is 'toy width=4'", std::invalid_argument);
  const auto unsigned_state = model::save_flat_state(l, {zeros, zeros, zeros}, 7);
  CHECK_THROWS_WITH_AS(model::read_flat_state(l, unsigned_state, "toy", "toy width=2"),
                       "toy load_state: missing blob 'model/signature'", std::invalid_argument);
}

TEST_CASE("fuyu-tiny's state keeps its entry names and order: param/, adam_m/, adam_v/, the step, the signature") {
  const auto cfg = test::tiny_model_config();
  models::fuyu_tiny m(model::model_context{cfg, 1, model::compute_device::cpu, 0, 1});
  const auto st = m.save_state();
  const auto& params = m.parameters();
  REQUIRE(st.tensors.size() == 3 * params.size());
  const char* groups[] = {"param/", "adam_m/", "adam_v/"};
  for (size_t g = 0; g < 3; ++g)
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& t = st.tensors[g * params.size() + i];
      CHECK(t.name == groups[g] + params[i].name);
      CHECK(t.shape == params[i].shape);
    }
  CHECK(params.front().name == "patch_proj.w");
  CHECK(params.back().name == "lm_head.w");
  REQUIRE(st.blobs.size() == 2);
  CHECK(st.blobs[0].name == "optimizer/step");
  CHECK(st.blobs[1].name == "model/signature");
  CHECK(std::string(st.blobs[1].bytes.begin(), st.blobs[1].bytes.end()) ==
        "fuyu-tiny d_model=32 layers=2 heads=2 d_ff=64 patch_dim=48 max_seq_len=64 vocab=260");
}
