// ustar writer and the header walker that tolerates corrupt shards (see tar_format.hpp).
#include "tar_format.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace msomni::data {
namespace {

// Octal field of `width` bytes, NUL-terminated, zero-padded (the portable form).
void put_octal(char* field, size_t width, uint64_t value) {
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i-- > 0 && value > 0; value >>= 3) digits[i] = char('0' + (value & 7));
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
}

// Parses an octal field; false on anything but digits, spaces and NULs.
bool get_octal(const char* field, size_t width, uint64_t& out) {
  out = 0;
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    out = out * 8 + uint64_t(field[i] - '0');
    any = true;
  }
  for (; i < width; ++i)
    if (field[i] != ' ' && field[i] != '\0') return false;
  return any;
}

uint64_t header_checksum(const tar_header_block& b) {
  uint64_t sum = 0;
  for (size_t i = 0; i < tar_block_size; ++i)
    sum += (i >= 148 && i < 156) ? uint64_t(' ') : uint64_t(static_cast<unsigned char>(b[i]));
  return sum;
}

bool all_zero(const tar_header_block& b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

uint64_t padded(uint64_t size) { return (size + tar_block_size - 1) / tar_block_size * tar_block_size; }

}  // namespace

tar_header_block make_ustar_header(std::string_view name, uint64_t size) {
  if (name.empty() || name.size() > 99) throw std::invalid_argument("tar member name must be 1..99 bytes: " + std::string(name));
  tar_header_block b{};
  std::memcpy(b.data(), name.data(), name.size());
  put_octal(b.data() + 100, 8, 0644);   // mode
  put_octal(b.data() + 108, 8, 0);      // uid
  put_octal(b.data() + 116, 8, 0);      // gid
  put_octal(b.data() + 124, 12, size);  // size
  put_octal(b.data() + 136, 12, 0);     // mtime 0 keeps shards byte-identical across runs
  b[156] = '0';                         // regular file
  std::memcpy(b.data() + 257, "ustar", 6);
  std::memcpy(b.data() + 263, "00", 2);
  put_octal(b.data() + 148, 7, header_checksum(b));
  b[155] = ' ';
  return b;
}

bool valid_tar_header(const tar_header_block& b) {
  if (std::memcmp(b.data() + 257, "ustar", 5) != 0) return false;
  uint64_t stored = 0, size = 0;
  if (!get_octal(b.data() + 148, 8, stored) || !get_octal(b.data() + 124, 12, size)) return false;
  return stored == header_checksum(b);
}

tar_writer::tar_writer(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  if (!out_) throw std::runtime_error("tar_writer: cannot open " + path + " for writing");
}

tar_writer::~tar_writer() {
  try {
    finish();
  } catch (...) {
  }
}

void tar_writer::add(std::string_view name, std::span<const uint8_t> bytes) {
  const auto header = make_ustar_header(name, bytes.size());
  out_.write(header.data(), header.size());
  out_.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  static const char zeros[tar_block_size] = {};
  const uint64_t pad = padded(bytes.size()) - bytes.size();
  out_.write(zeros, std::streamsize(pad));
  written_ += tar_block_size + bytes.size() + pad;
  if (!out_) throw std::runtime_error("tar_writer: write failed on " + path_);
}

void tar_writer::finish() {
  if (finished_) return;
  finished_ = true;
  static const char zeros[2 * tar_block_size] = {};
  out_.write(zeros, sizeof zeros);
  written_ += sizeof zeros;
  out_.close();
  if (!out_) throw std::runtime_error("tar_writer: closing " + path_ + " failed");
}

tar_listing list_tar(const byte_source& src) { return list_tar(src, [](const tar_member&) { return true; }); }

tar_listing list_tar(const byte_source& src, const std::function<bool(const tar_member&)>& more) {
  tar_listing out;
  if (const auto known = src.known_listing()) {
    out.bad_header_runs = known->bad_header_runs;
    out.truncated = known->truncated;
    for (const auto& m : known->members) {
      out.members.push_back(m);
      if (!more(m)) return out;
    }
    return out;
  }
  const uint64_t end = src.size();
  uint64_t pos = 0;
  bool in_bad_run = false;
  tar_header_block block{};
  while (pos + tar_block_size <= end) {
    src.read_at(pos, block.data(), tar_block_size);
    if (all_zero(block)) {
      if (!in_bad_run) break;  // end of archive
      pos += tar_block_size;   // zero padding inside a damaged region: keep scanning
      continue;
    }
    if (!valid_tar_header(block)) {
      // A damaged header: its size is untrustworthy, so scan block by block until the next
      // valid header. One run counts once however many blocks it spans.
      if (!in_bad_run) ++out.bad_header_runs;
      in_bad_run = true;
      pos += tar_block_size;
      continue;
    }
    in_bad_run = false;
    uint64_t size = 0;
    char size_field[12];
    std::memcpy(size_field, block.data() + 124, 12);
    uint64_t parsed = 0;
    for (char c : size_field)
      if (c >= '0' && c <= '7') parsed = parsed * 8 + uint64_t(c - '0');
    size = parsed;
    const char type = block[156];
    const uint64_t data = pos + tar_block_size;
    if (data + size > end) {
      out.truncated = true;
      break;
    }
    if (type == '0' || type == '\0') {
      const size_t name_len = strnlen(block.data(), 100);
      out.members.push_back({std::string(block.data(), name_len), data, size});
      if (!more(out.members.back())) return out;
    }
    pos = data + padded(size);
  }
  if (pos + tar_block_size > end && pos < end && !out.truncated && !in_bad_run) out.truncated = true;
  return out;
}

}  // namespace msomni::data
