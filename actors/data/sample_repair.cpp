// Bad-sample replacement (see sample_repair.hpp).
#include "sample_repair.hpp"

#include "core/log.hpp"

namespace msomni::data {

decoded_sample decode_or_replace(media_decoder& decoder, sample_fetcher& fetcher, const raw_sample& primary,
                                 bool keyframe_only, uint32_t max_run) {
  decoded_sample out = decoder.decode(primary, keyframe_only);
  if (!out.bad) return out;
  for (uint32_t k = 1; k < max_run; ++k) {
    const raw_sample r = fetcher.read(primary.pos.source, primary.pos.draw + k, false);
    if (r.bad) continue;
    decoded_sample x = decoder.decode(r, keyframe_only);
    if (x.bad) continue;
    MSOMNI_LOG(debug, "data.decode") << primary.key << " (" << to_string(out.reason) << ") replaced by " << x.key;
    x.pos = primary.pos;
    x.shard_problems = std::move(out.shard_problems);
    x.replaced = true;
    x.replaced_reason = out.reason;
    x.replaced_key = std::move(out.key);
    x.replaced_cause = std::move(out.cause);
    x.bad_run = k;
    return x;
  }
  out.bad_run = max_run;
  return out;
}

}  // namespace msomni::data
