// A plugin that exists for its [model] key table: built several times with MSOMNI_KEYS_TABLE
// selecting a well-formed table (one key of each type) or a malformed one, so the config
// reader's checks of declared keys can be seen to pass and to refuse. Its model is never
// built (the factory returns nothing).
#include "model/plugin_abi.hpp"

using namespace msomni::model;

#if MSOMNI_KEYS_TABLE == 0
MSOMNI_MODEL_PLUGIN_KEYS(integer_key("probe_width", 1, 64, 8, "an integer"),
                         float_key("probe_rate", 0.0, 0.5, 0.25, "a float"),
                         bool_key("probe_tied", false, "a boolean"),
                         string_key("probe_init", "normal", "a string"))
#elif MSOMNI_KEYS_TABLE == 1
MSOMNI_MODEL_PLUGIN_KEYS(integer_key("probe_width", 1, 64, 8), bool_key("probe_width", true))
#elif MSOMNI_KEYS_TABLE == 2
MSOMNI_MODEL_PLUGIN_KEYS(integer_key("d_model", 1, 64, 8))
#elif MSOMNI_KEYS_TABLE == 3
MSOMNI_MODEL_PLUGIN_KEYS(float_key("probe_rate", 0.0, 0.5, 0.75))
#endif

MSOMNI_MODEL_PLUGIN(host) {
  host.add_model("keys-probe", "declares keys, builds nothing (test plugin)",
                 [](const model_context&) -> std::unique_ptr<trainable_model> { return nullptr; });
}
