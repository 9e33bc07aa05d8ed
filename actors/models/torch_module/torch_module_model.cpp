// The torch backend's model (see torch_module_model.hpp).
#include "torch_module/torch_module_model.hpp"

#include "core/rng.hpp"
#include "model/adamw.hpp"
#include "model/flat_state.hpp"
#include "torch_module/batch_layout.hpp"
#include "torch_module/torch_module_error.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace msomni::models {

namespace {

// The worker's copy of model.torch_args: a JSON object (the config reader made it one).
nlohmann::json constructor_args(const config::model_section& m) {
  auto args = nlohmann::json::parse(m.torch_args.empty() ? "{}" : m.torch_args, nullptr, false);
  if (args.is_discarded() || !args.is_object())
    throw torch_module_error("model.torch_args", "not a JSON object: " + m.torch_args);
  return args;
}

// The checkpoint's fingerprint of the module: its class, and the names and shapes of its
// parameters and persistent buffers (hashed), so a checkpoint of another module is refused
// by name rather than by a size mismatch.
std::string signature_of(const std::string& cls, const nlohmann::json& built) {
  std::string shapes;
  for (const auto& p : built.at("parameters")) shapes += p.at("name").get<std::string>() + p.at("shape").dump() + ";";
  for (const auto& b : built.at("buffers")) shapes += "buffer " + b.get<std::string>() + ";";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(stable_hash(shapes)));
  return "torch " + cls + " " + std::to_string(built.at("parameters").size()) + " tensors, layout " + hex;
}

}  // namespace

torch_module_model::torch_module_model(const model::model_context& context)
    : context_(context),
      account_(kernels::process_memory_account()),
      threads_(context.cpu_threads > 0 ? context.cpu_threads
                                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {
  const auto& m = context.config;
  if (context.device == model::compute_device::cuda)
    throw torch_module_error("training.device", "not built yet: the torch backend computes on the CPU; set "
                                                "training.device = \"cpu\"");
  if (m.torch_file.empty()) throw torch_module_error("model.torch_file", "model.name = \"torch\" needs model.torch_file");
  if (m.torch_class.empty()) throw torch_module_error("model.torch_class", "model.name = \"torch\" needs model.torch_class");
  auto args = constructor_args(m);
  worker_ = std::make_unique<python_worker>(m.torch_python, threads_);
  const auto built = worker_
                         ->request({{"op", "build"},
                                    {"file", m.torch_file},
                                    {"class", m.torch_class},
                                    {"args", std::move(args)},
                                    {"seed", context.seed},
                                    {"threads", threads_}})
                         .body;
  for (const auto& p : built.at("parameters"))
    layout_.add(p.at("name").get<std::string>(), p.at("shape").get<std::vector<int64_t>>(), p.at("decay").get<bool>());
  for (const auto& [alias, name] : built.at("aliases").items()) aliases_[alias] = name.get<std::string>();
  class_where_ = built.value("where", std::string());
  signature_ = signature_of(m.torch_class, built);
  const size_t bytes = sizeof(float) * total();
  params_ = shared_region("msomni-torch-parameters", bytes);
  grads_ = shared_region("msomni-torch-gradients", bytes);
  adam_m_.assign(total(), 0.0f);
  adam_v_.assign(total(), 0.0f);
  params_charge_ = charged_memory(account_, params_.data(), bytes, "cpu (torch parameters)");
  grads_charge_ = charged_memory(account_, grads_.data(), bytes, "cpu (torch gradients)");
  adam_m_charge_ = charged_memory(account_, adam_m_.data(), bytes, "cpu (AdamW moments)");
  adam_v_charge_ = charged_memory(account_, adam_v_.data(), bytes, "cpu (AdamW moments)");
  const int fds[] = {params_.fd(), grads_.fd()};
  worker_->request({{"op", "attach"}}, {}, fds);  // the module's initial values into params_
}

void torch_module_model::copy_to_host(model::buffer_role which, std::span<float> out) const {
  if (out.size() != total())
    throw std::invalid_argument("torch copy_to_host: buffer holds " + std::to_string(out.size()) +
                                " floats, the model has " + std::to_string(total()));
  const auto& src = which == model::buffer_role::parameters ? params_ : grads_;
  std::memcpy(out.data(), src.data(), sizeof(float) * total());
}

void torch_module_model::copy_from_host(model::buffer_role which, std::span<const float> in) {
  if (in.size() != total())
    throw std::invalid_argument("torch copy_from_host: buffer holds " + std::to_string(in.size()) +
                                " floats, the model has " + std::to_string(total()));
  auto& dst = which == model::buffer_role::parameters ? params_ : grads_;
  std::memcpy(dst.data(), in.data(), sizeof(float) * total());
}

void torch_module_model::zero_gradients() {
  std::memset(grads_.data(), 0, sizeof(float) * total());
}

double torch_module_model::run(const model::micro_batch& mb, bool train, float grad_scale, bool require_finite) {
  const auto layout = layout_of(mb);
  nlohmann::json request = describe_batch(mb, layout);
  request["op"] = "forward";
  request["train"] = train;
  request["grad_scale"] = grad_scale;
  request["require_finite"] = require_finite;
  request["seed"] = micro_batch_seed(context_.seed, step_, mb);
  std::vector<int> fds;
  if (static_cast<int64_t>(batch_.size()) < layout.bytes) {
    // A larger batch than any before: new memory, sent along (the worker maps it instead).
    batch_charge_ = {};
    batch_ = shared_region("msomni-torch-batch", static_cast<size_t>(layout.bytes + layout.bytes / 2));
    batch_charge_ = charged_memory(account_, batch_.data(), batch_.size(), "cpu (torch micro-batch)");
    request["batch_bytes"] = batch_.size();
    fds.push_back(batch_.fd());
  }
  write_batch(mb, layout, {batch_.data(), batch_.size()});
  const auto reply = worker_->request(request, {}, fds);
  if (reply.tail.size() != sizeof(double))
    throw torch_module_error("model.torch_file", "the torch worker answered a forward with " +
                                                     std::to_string(reply.tail.size()) + " bytes, not the loss");
  double loss = 0;
  std::memcpy(&loss, reply.tail.data(), sizeof loss);
  if (train) {
    // The activations existed in the worker between its forward and backward: counted for that
    // span, so the step's peak holds them and a budget they exceed fails the step as out of
    // memory (after the fact: the worker has no budget of its own).
    last_activation_bytes_ = reply.body.value("activation_bytes", uint64_t{0});
    account_->charge(last_activation_bytes_, "cpu (torch activations)");
    account_->refund(last_activation_bytes_);
  }
  return loss;
}

std::vector<torch_module_model::placement> torch_module_model::placements() const {
  std::vector<placement> out;
  const auto reply = worker_->request({{"op", "placement"}});  // held: the loop reads into it
  for (const auto& p : reply.body.at("parameters"))
    out.push_back({p.at("name").get<std::string>(), p.at("value").get<int64_t>(), p.at("grad").get<int64_t>()});
  return out;
}

model::loss_report torch_module_model::forward_backward(const model::micro_batch& mb, float grad_scale) {
  mb.validate();
  model::loss_report r{0.0, mb.target_tokens(), mb.input_tokens()};
  if (r.target_tokens == 0) return r;  // nothing to learn from; gradients unchanged
  r.loss = run(mb, true, grad_scale, false);
  return r;
}

model::loss_report torch_module_model::evaluate(const model::micro_batch& mb) {
  mb.validate();
  model::loss_report r{0.0, mb.target_tokens(), mb.input_tokens()};
  if (r.target_tokens == 0) return r;
  r.loss = run(mb, false, 0.0f, false);
  return r;
}

double torch_module_model::probe(const model::micro_batch& mb) {
  mb.validate();
  const double loss = run(mb, true, 1.0f, true);
  run(mb, false, 0.0f, true);
  zero_gradients();
  return loss;
}

model::optimizer_report torch_module_model::optimizer_step(const model::optimizer_settings& s) {
  return model::adamw_step(layout_, s, {parameter_data(), grads_.as<float>(total()), adam_m_, adam_v_}, step_, threads_);
}

model::model_state torch_module_model::save_state() const {
  auto st = model::save_flat_state(layout_, {params_.as<float>(total()), adam_m_, adam_v_}, step_, signature_);
  const auto buffers = worker_->request({{"op", "save"}}).tail;
  st.blobs.push_back(model::state_blob{torch_buffers_blob, buffers});
  if (!aliases_.empty()) {
    const std::string text = nlohmann::json(aliases_).dump();
    st.blobs.push_back(model::state_blob{torch_aliases_blob, std::vector<uint8_t>(text.begin(), text.end())});
  }
  return st;
}

void torch_module_model::load_state(const model::model_state& st) {
  // Everything is checked before anything changes: the flat state here, the buffers by the
  // worker (it checks them all before copying any).
  auto s = model::read_flat_state(layout_, st, "torch", signature_);
  // A rank a resize added has no buffers of its own in the checkpoint: it keeps the module's.
  if (const auto* b = st.find_blob(torch_buffers_blob)) {
    try {
      worker_->request({{"op", "load"}}, b->bytes);
    } catch (const torch_module_error& e) {
      throw std::invalid_argument(std::string("torch load_state: ") + e.what());
    }
  }
  std::memcpy(params_.data(), s.parameters.data(), sizeof(float) * total());
  // Copied into the moments' own memory: its address is what the account counts it under.
  std::copy(s.adam_m.begin(), s.adam_m.end(), adam_m_.begin());
  std::copy(s.adam_v.begin(), s.adam_v.end(), adam_v_.begin());
  step_ = s.step;
}

model::memory_estimate torch_module_model::estimate_memory(int64_t micro_batch, int64_t seq_len) const {
  const int64_t bytes = static_cast<int64_t>(sizeof(float) * total());
  model::memory_estimate e;
  e.parameter_bytes = bytes;
  e.gradient_bytes = bytes;
  e.optimizer_bytes = 2 * bytes;
  // The module's activations are measured only as it trains (the worker counts what autograd
  // saves); before that only the shared micro-batch is estimated (patches of at most seq_len
  // positions, tokens and mask).
  const auto& c = context_.config;
  const int64_t patch_dim = c.patch_size * c.patch_size * 3;
  e.activation_bytes = micro_batch * seq_len * (patch_dim * 4 + 4 + 1);
  return e;
}

std::string torch_module_model::description() const {
  return context_.config.torch_class + " (" + class_where_ + "), " + worker_->versions();
}

}  // namespace msomni::models
