// The models compiled into msomni. Whoever builds a model_registry (the rank process, the
// tests) calls this once; plugins add theirs through model.plugin.
#pragma once

#include "model/model_registry.hpp"

namespace msomni::models {

void register_builtin_models(model::model_registry& registry);

}  // namespace msomni::models
