// The embedding API: the interface a model implements so the rank worker can train it
// without knowing what it is. One instance is one data-parallel replica's copy of the
// model: its parameters, gradient buffer and optimizer state. Header-only (inline virtual
// destructor, no out-of-line symbols) so a plugin .so needs nothing from our libraries.
//
// A training step on one rank, with grad_accum micro-batches and W ranks:
//
//   m.zero_gradients();
//   for (k in 0..grad_accum) m.forward_backward(mb[k], 1.0f / grad_accum);
//   all_reduce_sum(m.gradient_data());            // flat, one buffer for all parameters
//   m.optimizer_step({.lr = lr, .gradient_scale = 1.0 / W, ...});
//
// Gradients are those of the mean loss over each micro-batch's target tokens, times the
// grad_scale passed in; they accumulate until zero_gradients().
#pragma once

#include "config/job_config.hpp"
#include "model/micro_batch.hpp"
#include "model/model_state.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace msomni::model {

enum class compute_device { cpu, cuda };

// Everything a model may depend on, passed in (no globals, no environment reads).
struct model_context {
  config::model_section config;  // [model]
  uint64_t seed = 0;             // training.seed; initialisation is a pure function of it
  compute_device device = compute_device::cpu;
  int device_index = 0;          // which GPU when device == cuda
  int cpu_threads = 0;           // CPU kernels' threads; 0 = all hardware threads
};

// One named parameter tensor: a slice [offset, offset + size) of the flat buffers.
struct parameter_info {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t size = 0;
  bool weight_decay = false;     // AdamW decays matrices, not biases/norms
};

struct loss_report {
  double loss = 0;               // mean cross-entropy over target tokens (0 when none)
  int64_t target_tokens = 0;
  int64_t input_tokens = 0;      // patches + text positions, for tokens/s
};

struct optimizer_settings {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.01;
  double grad_clip = 1.0;        // global L2 norm; <= 0 disables clipping
  double gradient_scale = 1.0;   // applied before clipping, e.g. 1/W after a sum all-reduce
};

struct optimizer_report {
  double grad_norm = 0;          // after gradient_scale, before clipping
  double clip_coefficient = 1;
  bool skipped = false;          // non-finite gradient: parameters left untouched
  int64_t step = 0;              // optimizer steps taken so far
};

struct memory_estimate {
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activation_bytes = 0;  // peak for one micro-batch, forward + backward
  int64_t total() const {
    return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes;
  }
};

// Where the flat parameter/gradient spans live.
enum class storage_kind { host, cuda_device };
enum class buffer_role { parameters, gradients };

class trainable_model {
 public:
  virtual ~trainable_model() = default;

  virtual std::string name() const = 0;
  virtual storage_kind storage() const = 0;
  virtual const std::vector<parameter_info>& parameters() const = 0;
  int64_t parameter_count() const {
    int64_t n = 0;
    for (const auto& p : parameters()) n += p.size;
    return n;
  }

  // Flat buffers in storage(): device pointers when storage() == cuda_device (hand them to
  // NCCL; use copy_to_host/copy_from_host for a host all-reduce).
  virtual std::span<float> parameter_data() = 0;
  virtual std::span<float> gradient_data() = 0;
  virtual void copy_to_host(buffer_role which, std::span<float> out) const = 0;
  virtual void copy_from_host(buffer_role which, std::span<const float> in) = 0;

  virtual void zero_gradients() = 0;
  // Forward and backward on one micro-batch; gradients += grad_scale * d(mean loss).
  // Throws std::invalid_argument when the batch does not fit the model.
  virtual loss_report forward_backward(const micro_batch& batch, float grad_scale) = 0;
  // Forward only; gradients untouched.
  virtual loss_report evaluate(const micro_batch& batch) = 0;
  virtual optimizer_report optimizer_step(const optimizer_settings& settings) = 0;

  // Full state (weights, optimizer moments, step counter) for checkpoints. load_state
  // throws std::invalid_argument naming the first missing or mis-sized entry and leaves
  // the model unchanged in that case.
  virtual model_state save_state() const = 0;
  virtual void load_state(const model_state& state) = 0;

  virtual memory_estimate estimate_memory(int64_t micro_batch, int64_t seq_len) const = 0;

  // Frees what the model keeps of its last micro-batch (its inputs and activation workspace,
  // kept to be reused by a batch of the same shape); the next forward allocates them anew.
  // Afterwards the memory in use is what the model holds between batches, which is how a rank
  // measures what a step the forecast says will not fit leaves for its batch. Optional: a model
  // that keeps nothing between batches (or does not say) does nothing.
  virtual void release_batch_buffers() {}
};

}  // namespace msomni::model
