// An msomni model plugin: "example-bigram", the byte bigram model of byte_bigram_model.hpp
// with two [model] keys of its own. It includes only installed msomni headers and links
// no msomni library.
#include "byte_bigram_model.hpp"

#include "model/plugin_abi.hpp"

using namespace msomni::model;

MSOMNI_MODEL_PLUGIN_KEYS(
    integer_key("example_hidden", 1, 256, 16, "embedding width"),
    float_key("example_init_std", 0.001, 1.0, 0.1, "standard deviation of the initial weights"))

MSOMNI_MODEL_PLUGIN(host) {
  host.add_model("example-bigram", "byte bigram language model (msomni's installed example)",
                 [](const model_context& c) -> std::unique_ptr<trainable_model> {
                   return std::make_unique<msomni::examples::byte_bigram>(
                       c, plugin_int(c, "example_hidden"), static_cast<float>(plugin_float(c, "example_init_std")),
                       "example-bigram");
                 });
}
