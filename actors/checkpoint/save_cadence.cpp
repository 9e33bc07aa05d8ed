// save_cadence (see save_cadence.hpp).
#include "save_cadence.hpp"

#include <algorithm>

namespace msomni::ckpt {

save_cadence::save_cadence(uint64_t interval_steps, uint64_t max_consecutive_failures)
    : interval_steps_(std::max<uint64_t>(interval_steps, 1)),
      max_failures_(std::max<uint64_t>(max_consecutive_failures, 1)) {}

bool save_cadence::due(uint64_t step, bool last) const { return last || step % interval_steps_ == 0; }

save_cadence::verdict save_cadence::on_outcome(bool committed) {
  if (committed) {
    failures_in_a_row_ = 0;
    return verdict::carry_on;
  }
  ++failures_in_a_row_;
  return failures_in_a_row_ >= max_failures_ ? verdict::give_up : verdict::carry_on;
}

}  // namespace msomni::ckpt
