// Registration of the built-in models (see builtin_models.hpp).
#include "builtin_models.hpp"

#include "fuyu_tiny/fuyu_tiny.hpp"

namespace msomni::models {

void register_builtin_models(model::model_registry& registry) {
  registry.add_model("fuyu-tiny",
                     "Fuyu-style decoder: patches projected into a causal byte-level "
                     "transformer (reference model)",
                     [](const model::model_context& c) -> std::unique_ptr<model::trainable_model> {
                       return std::make_unique<fuyu_tiny>(c);
                     });
}

}  // namespace msomni::models
