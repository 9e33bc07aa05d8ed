// Crash-safe file primitives: a file written under a temporary name, fsynced, renamed into
// place and its directory fsynced; whole-file reads; directory fsync. Every mutating system
// call passes through an optional io_fault_plan so tests can kill the process or fail with
// ENOSPC at a chosen operation, deterministically from a seed.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::ckpt {

// Fault injection (tests and the crash helper only). -1 = never.
struct io_fault_plan {
  std::atomic<int64_t> ops_until_kill{-1};     // SIGKILL self at this mutating op
  std::atomic<int64_t> bytes_until_fail{-1};   // writes past this budget fail with fail_errno
  int fail_errno = 28;                         // ENOSPC
  std::atomic<int64_t> ops_done{0};            // counted always, to size kill points
};

// Anything shard bytes can be streamed into.
class byte_sink {
 public:
  virtual ~byte_sink() = default;
  virtual void write(const void* data, size_t size) = 0;
};

class memory_sink : public byte_sink {
 public:
  void write(const void* data, size_t size) override {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + size);
  }
  std::vector<uint8_t> bytes;
};

// A new file at `final_path`, written as `tmp_path` first. commit() makes it durable and
// visible; destruction without commit() removes the temporary (a crash leaves it behind,
// which is what the cleanup policy is for).
class durable_file : public byte_sink {
 public:
  durable_file(std::filesystem::path final_path, std::filesystem::path tmp_path,
               io_fault_plan* faults);
  ~durable_file() override;
  durable_file(const durable_file&) = delete;
  durable_file& operator=(const durable_file&) = delete;

  void write(const void* data, size_t size) override;
  void commit();
  uint64_t bytes_written() const noexcept { return written_; }

 private:
  std::filesystem::path final_path_;
  std::filesystem::path tmp_path_;
  io_fault_plan* faults_;
  int fd_ = -1;
  uint64_t written_ = 0;
  uint64_t kicked_ = 0;  // bytes already handed to writeback
  bool committed_ = false;
};

// Counts one mutating operation against the plan (and dies there if it is the kill point).
void fault_point(io_fault_plan* faults);

void fsync_dir(const std::filesystem::path& dir, io_fault_plan* faults);
// rename(2) then fsync of the destination's directory.
void durable_rename(const std::filesystem::path& from, const std::filesystem::path& to,
                    io_fault_plan* faults);
void make_dir(const std::filesystem::path& dir, io_fault_plan* faults);  // EEXIST is fine
void remove_tree(const std::filesystem::path& p, io_fault_plan* faults);
// Small files (manifest, pointer): temp + fsync + rename + dir fsync.
void write_file_atomically(const std::filesystem::path& final_path, std::string_view content,
                           const std::string& tmp_name, io_fault_plan* faults);
std::vector<uint8_t> read_file(const std::filesystem::path& p);
std::string read_text_file(const std::filesystem::path& p);

}  // namespace msomni::ckpt
