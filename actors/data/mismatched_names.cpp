// mismatched_names (see mismatched_names.hpp).
#include "mismatched_names.hpp"

#include "core/log.hpp"

namespace msomni::data {

bool mismatched_names::note(const decoded_sample& s) {
  if (s.mismatched_as.empty() || s.bad) return false;
  ++count_;
  if (warned_.insert(s.pos.source).second) {
    MSOMNI_LOG(warn, "data.decode") << s.key << ": its media bytes are " << s.mismatched_as
                                    << ", not the format its name says; decoded as " << s.mismatched_as
                                    << " (counted as mismatched_name; further ones of this source are counted, not logged)";
  }
  return true;
}

}  // namespace msomni::data
