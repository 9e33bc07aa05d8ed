// Human-readable rendering of the data pipeline's metrics.
#include "data_metrics.hpp"

#include <iomanip>
#include <sstream>

namespace msomni::data {

std::string data_metrics::report() const {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "batches " << batches << "; items/s reader " << reader.items_per_s << " decoder " << decoder.items_per_s
     << " tensor " << tensor.items_per_s << "; decode ms/sample";
  for (int m = 0; m < modality_count; ++m)
    if (decoded[m] > 0) os << ' ' << to_string(modality(m)) << '=' << decode_ms[m] / double(decoded[m]);
  os << "; downgrades " << downgrades << '/' << videos << " videos; data wait total " << data_wait_ms_total
     << " ms, max " << data_wait_ms_max << " ms";
  if (mismatched_name > 0) os << "; mismatched names " << mismatched_name;
  return os.str();
}

}  // namespace msomni::data
