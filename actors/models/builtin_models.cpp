// Registration of the built-in models (see builtin_models.hpp).
#include "builtin_models.hpp"

#include "fuyu_tiny/fuyu_tiny.hpp"
#include "torch_module/torch_module_model.hpp"

namespace msomni::models {

void register_builtin_models(model::model_registry& registry) {
  registry.add_model("fuyu-tiny",
                     "Fuyu-style decoder: patches projected into a causal byte-level "
                     "transformer (reference model)",
                     [](const model::model_context& c) -> std::unique_ptr<model::trainable_model> {
                       return std::make_unique<fuyu_tiny>(c);
                     });
  registry.add_model("torch",
                     "a PyTorch nn.Module (model.torch_file, model.torch_class) run by a Python "
                     "worker on msomni's shared parameter and gradient buffers",
                     [](const model::model_context& c) -> std::unique_ptr<model::trainable_model> {
                       return std::make_unique<torch_module_model>(c);
                     });
}

}  // namespace msomni::models
