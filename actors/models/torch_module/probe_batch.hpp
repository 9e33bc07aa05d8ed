// The micro-batch msomni-run feeds a torch model before anything starts: the job's largest
// shape (training.micro_batch samples, every patch slot of model.video_frames frames, the
// text that fills model.max_seq_len), with a video, an image and a text sample in turn, so a
// module that cannot take one of them is refused before training, not at its first such batch.
#pragma once

#include "config/job_config.hpp"
#include "model/micro_batch.hpp"

namespace msomni::models {

model::micro_batch make_probe_batch(const config::job_config& cfg);

}  // namespace msomni::models
