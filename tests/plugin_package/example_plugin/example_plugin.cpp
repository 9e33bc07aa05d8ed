// An out-of-tree model plugin: "example-bigram", msomni's bigram test model with two
// [model] keys of its own. It includes only the installed embedding API headers.
#include "bigram_model.hpp"  // msomni's test bigram model (tests/models), header-only

#include "model/plugin_abi.hpp"

using namespace msomni::model;

MSOMNI_MODEL_PLUGIN_KEYS(
    integer_key("example_hidden", 1, 256, 16, "embedding width"),
    float_key("example_init_std", 0.001, 1.0, 0.1, "standard deviation of the initial weights"))

MSOMNI_MODEL_PLUGIN(host) {
  host.add_model("example-bigram", "byte bigram MLP built out of tree",
                 [](const model_context& c) -> std::unique_ptr<trainable_model> {
                   return std::make_unique<msomni::test_models::bigram_mlp>(
                       c, plugin_int(c, "example_hidden"), static_cast<float>(plugin_float(c, "example_init_std")),
                       "example-bigram");
                 });
}
