// A torch model through the embedding API, with its real Python worker: the module's
// parameters and gradients are msomni's buffers, gradients accumulate with the grad scale,
// msomni's AdamW trains it, its state (weights, moments, step, buffers) saves and loads
// exactly, a checkpoint of another module is refused, tied weights appear once, a worker
// that dies is reported, the parameters and gradients still lie in msomni's buffers after
// training steps, and the buffers and each micro-batch's activations count in the memory
// account. Skipped when /usr/bin/python3 cannot import torch.
#include "models/torch_python.hpp"
#include "square_batches.hpp"
#include "support/test_skip.hpp"
#include "torch_module/torch_module_error.hpp"
#include "torch_module/torch_module_model.hpp"
#include "memory/memory_account.hpp"

#include <signal.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace msomni;

namespace {

const std::string modules_dir = std::string(MSOMNI_SOURCE_DIR) + "/tests/models/torch_modules";

config::model_section tiny_lm(const std::string& args) {
  config::model_section m;
  m.name = "torch";
  m.image_size = 16;
  m.patch_size = 8;
  m.video_frames = 2;
  m.max_seq_len = 64;
  m.torch_file = modules_dir + "/tiny_lm.py";
  m.torch_class = "TinyLM";
  m.torch_args = args;
  return m;
}

models::torch_module_model make(const std::string& args = "{}") {
  return models::torch_module_model(model::model_context{tiny_lm(args), 5, model::compute_device::cpu, 0, 1});
}

std::vector<model::micro_batch> batches(int n) {
  test::square_batches source(tiny_lm("{}"), 2, 24, 3);
  std::vector<model::micro_batch> out;
  for (int i = 0; i < n; ++i) out.push_back(source.next());
  return out;
}

std::vector<float> copy_of(std::span<float> s) { return {s.begin(), s.end()}; }

double max_gap(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}

// One training step as a rank takes it (one replica): zero, accumulate, AdamW.
double train_step(model::trainable_model& m, const std::vector<model::micro_batch>& mbs) {
  m.zero_gradients();
  double loss = 0;
  for (const auto& mb : mbs) loss += m.forward_backward(mb, 1.0f / static_cast<float>(mbs.size())).loss;
  m.optimizer_step({.lr = 1e-2});
  return loss;
}

}  // namespace

TEST_CASE("a torch module's parameters are msomni's flat buffer under the module's own names") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto m = make();
  std::vector<std::string> names;
  for (const auto& p : m.parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"embed.weight", "hidden.weight", "hidden.bias", "norm.weight", "norm.bias",
                                          "out.weight"});
  CHECK(m.parameters()[0].shape == std::vector<int64_t>{260, 16});
  CHECK(m.parameters()[0].weight_decay);
  CHECK_FALSE(m.parameters()[2].weight_decay);  // a bias
  CHECK(m.parameter_count() == 260 * 16 + 16 * 16 + 16 + 16 + 16 + 16 * 260);
  CHECK(m.storage() == model::storage_kind::host);
  // The module's initial values are in the buffer, and the same for every replica (the job seed).
  auto again = make();
  CHECK(copy_of(m.parameter_data()) == copy_of(again.parameter_data()));
  CHECK(std::any_of(m.parameter_data().begin(), m.parameter_data().end(), [](float v) { return v != 0; }));
  CHECK(m.description().find("TinyLM (" + modules_dir + "/tiny_lm.py:") == 0);
}

TEST_CASE("a torch module's backward lands in msomni's gradient buffer and accumulates with the grad scale") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto m = make();
  const auto mb = batches(1)[0];
  m.zero_gradients();
  const auto r = m.forward_backward(mb, 1.0f);
  CHECK(r.target_tokens == mb.target_tokens());
  CHECK(r.input_tokens == mb.input_tokens());
  CHECK(r.loss == doctest::Approx(std::log(260.0)).epsilon(0.05));
  const auto whole = copy_of(m.gradient_data());
  CHECK(std::any_of(whole.begin(), whole.end(), [](float v) { return v != 0; }));
  m.zero_gradients();
  CHECK(std::all_of(m.gradient_data().begin(), m.gradient_data().end(), [](float v) { return v == 0; }));
  m.forward_backward(mb, 0.25f);
  m.forward_backward(mb, 0.75f);
  CHECK(max_gap(copy_of(m.gradient_data()), whole) < 1e-6);
  // Evaluation: the same loss, gradients untouched.
  const auto before = copy_of(m.gradient_data());
  CHECK(m.evaluate(mb).loss == doctest::Approx(r.loss).epsilon(1e-6));
  CHECK(copy_of(m.gradient_data()) == before);
}

TEST_CASE("msomni's AdamW on the shared buffer trains the module it computes with") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto m = make();
  const auto data = batches(2);
  const double first = train_step(m, data);
  double last = first;
  for (int i = 0; i < 30; ++i) last = train_step(m, data);
  CHECK(last < 0.5 * first);
  // A parameter written here is what the module computes with next.
  std::fill(m.parameter_data().begin(), m.parameter_data().end(), 0.0f);
  CHECK(m.evaluate(data[0]).loss == doctest::Approx(std::log(260.0)).epsilon(1e-6));
}

TEST_CASE("a torch model's state saves and loads exactly: weights, moments, step and buffers, dropout included") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto m = make(R"({"dropout": 0.3})");
  const auto data = batches(4);
  for (int i = 0; i < 3; ++i) train_step(m, {data[0], data[1]});
  const auto saved = m.save_state();
  const auto params_at_save = copy_of(m.parameter_data());
  REQUIRE(saved.find_blob(models::torch_buffers_blob));
  CHECK(saved.find_blob(models::torch_aliases_blob) == nullptr);  // nothing is tied
  std::vector<double> losses;
  for (int i = 0; i < 2; ++i) losses.push_back(train_step(m, {data[2], data[3]}));
  const auto after = m.save_state();

  auto other = make(R"({"dropout": 0.3})");
  other.load_state(saved);
  CHECK(copy_of(other.parameter_data()) == params_at_save);
  std::vector<double> again;
  for (int i = 0; i < 2; ++i) again.push_back(train_step(other, {data[2], data[3]}));
  CHECK(again == losses);  // bit for bit: the same dropout masks after the load
  const auto after_again = other.save_state();
  CHECK(copy_of(other.parameter_data()) == copy_of(m.parameter_data()));
  CHECK(after_again.find_blob(models::torch_buffers_blob)->bytes == after.find_blob(models::torch_buffers_blob)->bytes);
  CHECK(after_again.find_blob(models::torch_buffers_blob)->bytes != saved.find_blob(models::torch_buffers_blob)->bytes);
  int64_t step = 0;
  CHECK(after_again.get_int64("optimizer/step", step));
  CHECK(step == 5);
}

TEST_CASE("a checkpoint of another module is refused by name and changes nothing") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto wide = make(R"({"width": 16})");
  auto narrow = make(R"({"width": 8})");
  const auto before = copy_of(narrow.parameter_data());
  CHECK_THROWS_WITH_AS(narrow.load_state(wide.save_state()), doctest::Contains("torch load_state: checkpoint is of 'torch TinyLM"),
                       std::invalid_argument);
  CHECK(copy_of(narrow.parameter_data()) == before);
  // The same module with a buffer the checkpoint lacks: refused by the worker, nothing changed.
  auto st = narrow.save_state();
  const std::string empty = R"({"buffers": []})";  // module_buffers.py's form, with no buffer
  std::vector<uint8_t> blob(8 + empty.size());
  const uint64_t n = empty.size();
  std::memcpy(blob.data(), &n, 8);
  std::memcpy(blob.data() + 8, empty.data(), n);
  std::find_if(st.blobs.begin(), st.blobs.end(), [](const auto& b) { return b.name == "torch/buffers"; })->bytes = blob;
  for (auto& t : st.tensors) std::fill(t.values.begin(), t.values.end(), 1.0f);
  CHECK_THROWS_WITH_AS(narrow.load_state(st), doctest::Contains("the checkpoint has no buffer 'loss_mean'"),
                       std::invalid_argument);
  CHECK(copy_of(narrow.parameter_data()) == before);
}

TEST_CASE("tied weights are one parameter under their first name, the other name kept as an alias") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto m = make(R"({"tied": true})");
  std::vector<std::string> names;
  for (const auto& p : m.parameters()) names.push_back(p.name);
  CHECK(std::find(names.begin(), names.end(), "out.weight") == names.end());
  CHECK(m.parameter_count() == 260 * 16 + 16 * 16 + 16 + 16 + 16);
  const auto st = m.save_state();
  const auto* aliases = st.find_blob(models::torch_aliases_blob);
  REQUIRE(aliases);
  CHECK(nlohmann::json::parse(aliases->bytes) == nlohmann::json{{"out.weight", "embed.weight"}});
}

TEST_CASE("a torch model refuses a GPU, and a worker that dies is reported with how it ended") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  CHECK_THROWS_WITH_AS(models::torch_module_model(model::model_context{tiny_lm("{}"), 5, model::compute_device::cuda, 0, 1}),
                       doctest::Contains("not built yet: the torch backend computes on the CPU"),
                       models::torch_module_error);
  auto m = make();
  ::kill(m.worker_pid(), SIGKILL);
  try {
    m.forward_backward(batches(1)[0], 1.0f);
    FAIL("the forward went through a dead worker");
  } catch (const models::torch_module_error& e) {
    CHECK(e.key == "model.torch_python");
    CHECK(std::string(e.what()).find("ended during 'forward': killed by signal 9") != std::string::npos);
  }
}

TEST_CASE("after training steps every parameter and its gradient still lie in msomni's buffers, at their layout offsets") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  auto m = make(R"({"dropout": 0.1})");
  const auto data = batches(2);
  for (int i = 0; i < 8; ++i) train_step(m, data);
  const auto where = m.placements();
  REQUIRE(where.size() == m.parameters().size());
  for (size_t i = 0; i < where.size(); ++i) {
    const auto& p = m.parameters()[i];
    CAPTURE(p.name);
    CHECK(where[i].name == p.name);
    CHECK(where[i].value_offset == p.offset * static_cast<int64_t>(sizeof(float)));
    CHECK(where[i].grad_offset == p.offset * static_cast<int64_t>(sizeof(float)));
  }
}

TEST_CASE("a torch model's buffers and each micro-batch's activations count in the process's memory account") {
  if (const auto why = testing::torch_missing_reason(); !why.empty()) MSOMNI_SKIP_TEST(why);
  const auto& account = kernels::process_memory_account();
  const uint64_t before = account->in_use();
  std::optional<models::torch_module_model> m;
  m.emplace(make());
  const uint64_t flat = sizeof(float) * static_cast<uint64_t>(m->parameter_count());
  // Parameters, gradients and AdamW's two moments.
  CHECK(account->in_use() - before == 4 * flat);
  const auto mb = batches(1)[0];
  m->zero_gradients();
  account->take_peak();
  m->forward_backward(mb, 1.0f);
  const uint64_t activations = m->last_activation_bytes();
  // At least the output layer's logits, which cross-entropy keeps for backward.
  CHECK(activations >= sizeof(float) * 260 * static_cast<uint64_t>(mb.target_tokens()));
  const uint64_t held = account->in_use();  // now with the shared micro-batch
  CHECK(held > before + 4 * flat);
  CHECK(account->take_peak() >= held + activations);
  // An evaluation saves nothing for backward.
  m->evaluate(mb);
  CHECK(m->last_activation_bytes() == activations);
  // A budget the activations do not fit in fails the micro-batch as out of memory.
  const uint64_t budget = account->budget();
  account->set_budget(held + activations / 2);
  CHECK_THROWS_AS(m->forward_backward(mb, 1.0f), kernels::out_of_memory);
  account->set_budget(budget);
  m.reset();
  CHECK(account->in_use() == before);
}
