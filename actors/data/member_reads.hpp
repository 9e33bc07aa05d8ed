// Reading the members a sample's plan names (tar_sample_assembler.hpp) from its shard, one
// read each, into the assembler: what the checks that read samples one by one share.
#pragma once

#include "tar_format.hpp"
#include "tar_sample_assembler.hpp"

namespace msomni::data {

// Reads each of `plan`'s members from `file` into `sample`, in order. Stops at the first read
// that comes back short and returns that member (it counts as absent); nullptr when all came.
const tar_member* read_members(const byte_source& file, const sample_reads& plan, raw_sample_assembler& sample);

}  // namespace msomni::data
