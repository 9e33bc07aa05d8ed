// Forward pass, manual backward pass (BPTT through the attention and the LSTM) and Adam.
#include "memory_lstm.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace msomni::predict {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// splitmix64: a fixed, portable stream for the initial weights.
struct splitmix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform(double a) {  // in [-a, a)
    return a * (2.0 * static_cast<double>(next() >> 11) / 9007199254740992.0 - 1.0);
  }
};

}  // namespace

struct lstm_attention_net::trace {
  size_t steps = 0;
  std::vector<double> x;               // T x I
  std::vector<double> i, f, g, o, c, tc, h;  // T x H each (tc = tanh(c))
  std::vector<double> q, alpha, ctx, y;
};

lstm_attention_net::lstm_attention_net(size_t inputs, size_t hidden, size_t outputs, uint64_t seed)
    : inputs_(inputs), hidden_(hidden), outputs_(outputs) {
  if (inputs == 0 || hidden == 0 || outputs == 0) throw std::invalid_argument("lstm: sizes must be positive");
  const size_t H = hidden, I = inputs, O = outputs;
  w_ = 0;
  u_ = w_ + 4 * H * I;
  b_ = u_ + 4 * H * H;
  wq_ = b_ + 4 * H;
  wo_ = wq_ + H * H;
  bo_ = wo_ + O * 2 * H;
  params_.assign(bo_ + O, 0.0);
  splitmix rng{seed};
  const double a_in = 1.0 / std::sqrt(static_cast<double>(I + H));
  for (size_t k = w_; k < b_; ++k) params_[k] = rng.uniform(a_in);
  for (size_t k = 0; k < H; ++k) params_[b_ + H + k] = 1.0;  // forget gate open at first
  const double a_h = 1.0 / std::sqrt(static_cast<double>(H));
  for (size_t k = wq_; k < wo_; ++k) params_[k] = rng.uniform(a_h);
  const double a_o = 1.0 / std::sqrt(static_cast<double>(2 * H));
  for (size_t k = wo_; k < bo_; ++k) params_[k] = rng.uniform(a_o);
  adam_m_.assign(params_.size(), 0.0);
  adam_v_.assign(params_.size(), 0.0);
}

void lstm_attention_net::run(std::span<const double> xs, trace& tr) const {
  const size_t H = hidden_, I = inputs_, O = outputs_;
  if (xs.empty() || xs.size() % I != 0) throw std::invalid_argument("lstm: input is not T x inputs");
  const size_t T = xs.size() / I;
  tr.steps = T;
  tr.x.assign(xs.begin(), xs.end());
  for (auto* v : {&tr.i, &tr.f, &tr.g, &tr.o, &tr.c, &tr.tc, &tr.h}) v->assign(T * H, 0.0);
  const double* W = params_.data() + w_;
  const double* U = params_.data() + u_;
  const double* B = params_.data() + b_;
  std::vector<double> z(4 * H);
  for (size_t t = 0; t < T; ++t) {
    const double* x = xs.data() + t * I;
    const double* hp = t > 0 ? tr.h.data() + (t - 1) * H : nullptr;
    const double* cp = t > 0 ? tr.c.data() + (t - 1) * H : nullptr;
    for (size_t r = 0; r < 4 * H; ++r) {
      double v = B[r];
      const double* wr = W + r * I;
      for (size_t j = 0; j < I; ++j) v += wr[j] * x[j];
      if (hp) {
        const double* ur = U + r * H;
        for (size_t j = 0; j < H; ++j) v += ur[j] * hp[j];
      }
      z[r] = v;
    }
    for (size_t k = 0; k < H; ++k) {
      const size_t at = t * H + k;
      tr.i[at] = sigmoid(z[k]);
      tr.f[at] = sigmoid(z[H + k]);
      tr.g[at] = std::tanh(z[2 * H + k]);
      tr.o[at] = sigmoid(z[3 * H + k]);
      tr.c[at] = tr.i[at] * tr.g[at] + (cp ? tr.f[at] * cp[k] : 0.0);
      tr.tc[at] = std::tanh(tr.c[at]);
      tr.h[at] = tr.o[at] * tr.tc[at];
    }
  }
  const double* hT = tr.h.data() + (T - 1) * H;
  const double* Wq = params_.data() + wq_;
  tr.q.assign(H, 0.0);
  for (size_t r = 0; r < H; ++r)
    for (size_t j = 0; j < H; ++j) tr.q[r] += Wq[r * H + j] * hT[j];
  const double inv_sqrt = 1.0 / std::sqrt(static_cast<double>(H));
  tr.alpha.assign(T, 0.0);
  double top = -1e300;
  for (size_t t = 0; t < T; ++t) {
    double s = 0;
    for (size_t k = 0; k < H; ++k) s += tr.h[t * H + k] * tr.q[k];
    tr.alpha[t] = s * inv_sqrt;
    top = std::max(top, tr.alpha[t]);
  }
  double sum = 0;
  for (auto& a : tr.alpha) sum += (a = std::exp(a - top));
  for (auto& a : tr.alpha) a /= sum;
  tr.ctx.assign(H, 0.0);
  for (size_t t = 0; t < T; ++t)
    for (size_t k = 0; k < H; ++k) tr.ctx[k] += tr.alpha[t] * tr.h[t * H + k];
  const double* Wo = params_.data() + wo_;
  const double* Bo = params_.data() + bo_;
  tr.y.assign(O, 0.0);
  for (size_t r = 0; r < O; ++r) {
    double v = Bo[r];
    for (size_t k = 0; k < H; ++k) v += Wo[r * 2 * H + k] * hT[k] + Wo[r * 2 * H + H + k] * tr.ctx[k];
    tr.y[r] = v;
  }
}

std::vector<double> lstm_attention_net::forward(std::span<const double> xs) const {
  trace tr;
  run(xs, tr);
  return tr.y;
}

double lstm_attention_net::loss_and_gradient(std::span<const double> xs, std::span<const double> targets,
                                             const std::vector<bool>& mask, std::vector<double>& grad) const {
  const size_t H = hidden_, I = inputs_, O = outputs_;
  if (targets.size() != O || mask.size() != O) throw std::invalid_argument("lstm: targets do not match outputs");
  if (grad.size() != params_.size()) grad.assign(params_.size(), 0.0);
  trace tr;
  run(xs, tr);
  const size_t T = tr.steps;
  size_t used = 0;
  for (bool m : mask) used += m ? 1 : 0;
  if (used == 0) return 0.0;
  double loss = 0;
  std::vector<double> dy(O, 0.0);
  for (size_t r = 0; r < O; ++r) {
    if (!mask[r]) continue;
    const double e = tr.y[r] - targets[r];
    loss += 0.5 * e * e / static_cast<double>(used);
    dy[r] = e / static_cast<double>(used);
  }
  double* gW = grad.data() + w_;
  double* gU = grad.data() + u_;
  double* gB = grad.data() + b_;
  double* gWq = grad.data() + wq_;
  double* gWo = grad.data() + wo_;
  double* gBo = grad.data() + bo_;
  const double* U = params_.data() + u_;
  const double* Wq = params_.data() + wq_;
  const double* Wo = params_.data() + wo_;
  const double* hT = tr.h.data() + (T - 1) * H;
  // Output layer.
  std::vector<double> dh(T * H, 0.0), dctx(H, 0.0);
  for (size_t r = 0; r < O; ++r) {
    if (dy[r] == 0) continue;
    gBo[r] += dy[r];
    for (size_t k = 0; k < H; ++k) {
      gWo[r * 2 * H + k] += dy[r] * hT[k];
      gWo[r * 2 * H + H + k] += dy[r] * tr.ctx[k];
      dh[(T - 1) * H + k] += Wo[r * 2 * H + k] * dy[r];
      dctx[k] += Wo[r * 2 * H + H + k] * dy[r];
    }
  }
  // Attention: ctx = sum a_t h_t, a = softmax(s), s_t = h_t . q / sqrt(H), q = Wq h_T.
  const double inv_sqrt = 1.0 / std::sqrt(static_cast<double>(H));
  std::vector<double> da(T, 0.0), dq(H, 0.0);
  double mean_da = 0;
  for (size_t t = 0; t < T; ++t) {
    for (size_t k = 0; k < H; ++k) {
      da[t] += dctx[k] * tr.h[t * H + k];
      dh[t * H + k] += tr.alpha[t] * dctx[k];
    }
    mean_da += tr.alpha[t] * da[t];
  }
  for (size_t t = 0; t < T; ++t) {
    const double ds = tr.alpha[t] * (da[t] - mean_da) * inv_sqrt;
    for (size_t k = 0; k < H; ++k) {
      dh[t * H + k] += ds * tr.q[k];
      dq[k] += ds * tr.h[t * H + k];
    }
  }
  for (size_t r = 0; r < H; ++r)
    for (size_t j = 0; j < H; ++j) {
      gWq[r * H + j] += dq[r] * hT[j];
      dh[(T - 1) * H + j] += Wq[r * H + j] * dq[r];
    }
  // LSTM, last step first.
  std::vector<double> dh_next(H, 0.0), dc_next(H, 0.0), dz(4 * H);
  for (size_t t = T; t-- > 0;) {
    for (size_t k = 0; k < H; ++k) {
      const size_t at = t * H + k;
      const double dht = dh[at] + dh_next[k];
      const double dct = dht * tr.o[at] * (1 - tr.tc[at] * tr.tc[at]) + dc_next[k];
      const double cprev = t > 0 ? tr.c[at - H] : 0.0;
      dz[k] = dct * tr.g[at] * tr.i[at] * (1 - tr.i[at]);
      dz[H + k] = dct * cprev * tr.f[at] * (1 - tr.f[at]);
      dz[2 * H + k] = dct * tr.i[at] * (1 - tr.g[at] * tr.g[at]);
      dz[3 * H + k] = dht * tr.tc[at] * tr.o[at] * (1 - tr.o[at]);
      dc_next[k] = dct * tr.f[at];
    }
    const double* x = tr.x.data() + t * I;
    const double* hp = t > 0 ? tr.h.data() + (t - 1) * H : nullptr;
    std::fill(dh_next.begin(), dh_next.end(), 0.0);
    for (size_t r = 0; r < 4 * H; ++r) {
      const double d = dz[r];
      gB[r] += d;
      double* gw = gW + r * I;
      for (size_t j = 0; j < I; ++j) gw[j] += d * x[j];
      if (hp) {
        double* gu = gU + r * H;
        const double* ur = U + r * H;
        for (size_t j = 0; j < H; ++j) {
          gu[j] += d * hp[j];
          dh_next[j] += ur[j] * d;
        }
      }
    }
  }
  return loss;
}

void lstm_attention_net::adam_step(std::vector<double>& grad, const adam_settings& s) {
  if (grad.size() != params_.size()) throw std::invalid_argument("lstm: gradient does not match parameters");
  double norm = 0;
  for (double g : grad) norm += g * g;
  norm = std::sqrt(norm);
  const double cut = norm > s.clip_norm && norm > 0 ? s.clip_norm / norm : 1.0;
  ++adam_steps_;
  const double c1 = 1.0 - std::pow(s.beta1, static_cast<double>(adam_steps_));
  const double c2 = 1.0 - std::pow(s.beta2, static_cast<double>(adam_steps_));
  for (size_t k = 0; k < params_.size(); ++k) {
    const double g = grad[k] * cut;
    adam_m_[k] = s.beta1 * adam_m_[k] + (1 - s.beta1) * g;
    adam_v_[k] = s.beta2 * adam_v_[k] + (1 - s.beta2) * g * g;
    params_[k] -= s.learning_rate * (adam_m_[k] / c1) / (std::sqrt(adam_v_[k] / c2) + s.epsilon);
  }
}

}  // namespace msomni::predict
