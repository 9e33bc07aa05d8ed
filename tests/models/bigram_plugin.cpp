// A second, deliberately different model built as a plugin: "bigram-mlp", the byte bigram
// model of msomni's installed example (runtime/model/examples/byte_bigram). It uses only the
// embedding API headers, no msomni library, which is the point: a new model plugs in through
// model.plugin without runtime changes. Its two [model] keys are its own, declared through
// MSOMNI_MODEL_PLUGIN_KEYS.
#include "byte_bigram_model.hpp"

#include "model/plugin_abi.hpp"

#include <cmath>
#include <cstdlib>

namespace {

using namespace msomni::model;
using msomni::examples::byte_bigram;

// 0 = as wide as model.d_model, so configs that leave it out keep their shape.
int64_t hidden_of(const model_context& c) {
  const int64_t h = plugin_int(c, "bigram_hidden");
  return h > 0 ? h : c.config.d_model;
}
float init_std_of(const model_context& c) { return static_cast<float>(plugin_float(c, "bigram_init_std")); }

// The same model gone wrong on purpose, for tests of what msomni does with non-finite
// training: from optimizer step MSOMNI_TEST_DIVERGE_AT_STEP on (default 12) its loss and
// gradients are NaN, deterministically, so a rollback to an earlier checkpoint meets the
// same divergence again. It exercises the guard; nothing ships it.
class bigram_diverging final : public byte_bigram {
 public:
  explicit bigram_diverging(const model_context& c) : byte_bigram(c, hidden_of(c), init_std_of(c), "bigram-diverging") {
    if (const char* at = std::getenv("MSOMNI_TEST_DIVERGE_AT_STEP")) diverge_at_ = std::atoll(at);
  }
  loss_report forward_backward(const micro_batch& mb, float grad_scale) override {
    auto r = run(mb, grad_scale, true);
    if (optimizer_steps() >= diverge_at_) {
      r.loss = std::nan("");
      gradient_data()[0] = std::nanf("");
    }
    return r;
  }

 private:
  int64_t diverge_at_ = 12;
};

}  // namespace

MSOMNI_MODEL_PLUGIN_KEYS(
    integer_key("bigram_hidden", 0, 4096, 0, "embedding width; 0 = model.d_model"),
    float_key("bigram_init_std", 0.0, 1.0, 0.1, "standard deviation of the initial weights"))

MSOMNI_MODEL_PLUGIN(host) {
  host.add_model("bigram-diverging", "bigram-mlp whose loss turns NaN at a set step (test plugin)",
                 [](const model_context& c) -> std::unique_ptr<trainable_model> {
                   return std::make_unique<bigram_diverging>(c);
                 });
  host.add_model("bigram-mlp", "byte bigram MLP language model (test plugin)",
                 [](const model_context& c) -> std::unique_ptr<trainable_model> {
                   return std::make_unique<byte_bigram>(c, hidden_of(c), init_std_of(c), "bigram-mlp");
                 });
}
