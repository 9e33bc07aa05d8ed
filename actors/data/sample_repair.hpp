// What fills a batch slot whose own sample is bad. The rule depends on nothing but the source
// order, so it is the same at every world size: the slot takes the next good sample of the
// same source in that source's order (draw d+1, d+2, ..., across an epoch end too), read and
// decoded by the rank that owns the slot. Only the slot's own sample is counted as bad (by
// that rank, under its reason); bad samples met while looking for a replacement are not,
// because each is counted at its own slot. The replacement is also used at its own slot: a
// bad sample costs one duplicate, never a hole, a shifted order or a smaller batch.
#pragma once

#include "media_decoder.hpp"
#include "source_reader.hpp"

namespace msomni::data {

// Decodes `primary`; when it is bad, decodes replacements until one is good or `max_run` bad
// samples in a row were met (then the result is bad: the caller stops the job with a reason).
// The result keeps the primary's position and shard problems.
decoded_sample decode_or_replace(media_decoder& decoder, sample_fetcher& fetcher, const raw_sample& primary,
                                 bool keyframe_only, uint32_t max_run);

}  // namespace msomni::data
