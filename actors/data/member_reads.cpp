// Reading a sample's planned members one by one (see member_reads.hpp).
#include "member_reads.hpp"

namespace msomni::data {

const tar_member* read_members(const byte_source& file, const sample_reads& plan, raw_sample_assembler& sample) {
  for (const auto& r : plan.reads) {
    std::vector<uint8_t> bytes(r.member->size);
    const bool complete = file.read_at(r.member->data_offset, bytes.data(), bytes.size()) == bytes.size();
    sample.add(r, std::move(bytes), complete);
    if (!complete) return r.member;
  }
  return nullptr;
}

}  // namespace msomni::data
