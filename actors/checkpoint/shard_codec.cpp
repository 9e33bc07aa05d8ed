// Shard encoding and verified decoding (layout in shard_codec.hpp).
#include "shard_codec.hpp"

#include "checkpoint_error.hpp"
#include "core/check.hpp"
#include "manifest.hpp"

#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <future>
#include <set>

namespace msomni::ckpt {

namespace {

constexpr char header_magic[8] = {'M', 'S', 'O', 'S', 'H', 'R', 'D', '1'};
constexpr char footer_magic[8] = {'M', 'S', 'O', 'S', 'H', 'E', 'N', 'D'};
constexpr uint32_t format_version = 2;      // written
constexpr uint32_t oldest_read_version = 1;  // version 1: no codec byte, every frame zstd
constexpr size_t header_bytes = 32;
constexpr size_t footer_bytes = 32;
constexpr size_t max_name_bytes = 4096;
constexpr size_t max_dims = 16;
// Frames at least this large are written while the next entry compresses.
constexpr size_t async_write_min_bytes = 256 << 10;
// Entries at least this large are probed before compressing: three samples of probe_bytes
// (start, middle, end) compressed alone; unless they shrink to compress_pays of their size,
// the entry is stored raw. Trained fp32 weights and optimizer moments barely shrink, and on
// few cores compressing them is slower than writing them.
constexpr size_t probe_min_bytes = 256 << 10;
constexpr size_t probe_bytes = 16 << 10;
constexpr double compress_pays = 0.90;

template <class T>
void put(std::string& out, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

// Bounds-checked little-endian reader over the index; a short read means a corrupt shard.
class reader {
 public:
  reader(std::span<const uint8_t> b, const std::string& where) : b_(b), where_(where) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string str(size_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  void need(size_t n) {
    if (b_.size() - pos_ < n) throw checkpoint_error(where_ + ": index truncated");
  }
  std::span<const uint8_t> b_;
  const std::string& where_;
  size_t pos_ = 0;
};

}  // namespace

uint64_t xxh3_of(std::span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

struct shard_encoder::impl {
  ZSTD_CCtx* cctx = nullptr;
  ZSTD_CCtx* probe = nullptr;  // single-threaded, for the samples
  std::vector<uint8_t> probe_buf;
  std::vector<uint8_t> buf[2];  // compress into one while the other is being written
  XXH3_state_t* file_hash = nullptr;
};

shard_encoder::shard_encoder(codec_options opts) : impl_(std::make_unique<impl>()) {
  impl_->cctx = ZSTD_createCCtx();
  impl_->probe = ZSTD_createCCtx();
  impl_->file_hash = XXH3_createState();
  if (!impl_->cctx || !impl_->probe || !impl_->file_hash) throw checkpoint_error("out of memory creating encoder");
  MSOMNI_CHECK_ZSTD(ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_compressionLevel, opts.zstd_level));
  MSOMNI_CHECK_ZSTD(ZSTD_CCtx_setParameter(impl_->probe, ZSTD_c_compressionLevel, opts.zstd_level));
  impl_->probe_buf.resize(ZSTD_compressBound(probe_bytes));
  MSOMNI_CHECK_ZSTD(ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_nbWorkers, opts.zstd_threads));
}

shard_encoder::~shard_encoder() {
  ZSTD_freeCCtx(impl_->cctx);
  ZSTD_freeCCtx(impl_->probe);
  XXH3_freeState(impl_->file_hash);
}

// Whether zstd shrinks `raw` enough to pay for itself, judged on samples of it.
bool shard_encoder::compression_pays(const void* raw, size_t raw_size) {
  if (raw_size < probe_min_bytes) return true;  // cheap to try whole; kept raw if it does not shrink
  const auto* p = static_cast<const uint8_t*>(raw);
  size_t sampled = 0, compressed = 0;
  for (const size_t at : {size_t{0}, raw_size / 2 - probe_bytes / 2, raw_size - probe_bytes}) {
    compressed += MSOMNI_CHECK_ZSTD(
        ZSTD_compress2(impl_->probe, impl_->probe_buf.data(), impl_->probe_buf.size(), p + at, probe_bytes));
    sampled += probe_bytes;
  }
  return static_cast<double>(compressed) <= compress_pays * static_cast<double>(sampled);
}

shard_summary shard_encoder::encode(const rank_state& state, uint32_t rank, uint64_t step,
                                    byte_sink& out) {
  const std::string who = "rank " + std::to_string(rank);
  std::set<std::string> names;
  for (const auto& t : state.tensors) names.insert(t.name);
  for (const auto& b : state.blobs) names.insert(b.name);
  if (names.size() != state.tensors.size() + state.blobs.size())
    throw checkpoint_error(who + ": duplicate entry names in state");
  for (const auto& t : state.tensors) {
    int64_t n = 1;
    bool negative = false;
    for (int64_t d : t.shape) {
      n *= d;
      negative = negative || d < 0;
    }
    if (negative || n != static_cast<int64_t>(t.values.size()))
      throw checkpoint_error(who + ": tensor '" + t.name + "' shape holds " + std::to_string(n) +
                             " values but has " + std::to_string(t.values.size()));
  }
  for (const auto& name : names)
    if (name.empty() || name.size() > max_name_bytes)
      throw checkpoint_error(who + ": bad entry name '" + name + "'");

  shard_summary sum;
  XXH3_state_t* file_hash = impl_->file_hash;
  XXH3_64bits_reset(file_hash);
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> meta_hash(XXH3_createState(),
                                                                            XXH3_freeState);
  XXH3_64bits_reset(meta_hash.get());
  // Large frames are written on a helper thread while the next entry compresses: at most
  // one write in flight, so two buffers suffice and the file stays in order.
  std::future<void> pending;
  struct drain {
    std::future<void>& f;
    ~drain() {
      if (f.valid()) f.wait();  // never unwind while a write still uses our buffers
    }
  } drain_on_exit{pending};
  auto settle = [&] {
    if (pending.valid()) pending.get();  // rethrows the write's error (ENOSPC, ...)
  };
  auto emit = [&](const void* p, size_t n, bool async) {
    settle();
    sum.bytes += n;
    auto job = [&out, file_hash, p, n] {
      out.write(p, n);
      XXH3_64bits_update(file_hash, p, n);
    };
    if (async) pending = std::async(std::launch::async, job);
    else job();
  };
  std::string header(header_magic, sizeof header_magic);
  put(header, format_version);
  put(header, rank);
  put(header, step);
  put(header, static_cast<uint32_t>(names.size()));
  put(header, uint32_t{0});
  XXH3_64bits_update(meta_hash.get(), header.data(), header.size());
  emit(header.data(), header.size(), false);

  std::string index;
  int which = 0;
  auto add_entry = [&](const std::string& name, entry_kind kind, const std::vector<int64_t>& shape,
                       const void* raw, size_t raw_size) {
    if (shape.size() > max_dims) throw checkpoint_error(who + ": '" + name + "' has too many dims");
    const uint64_t raw_xxh3 = XXH3_64bits(raw, raw_size);
    // The frame: zstd's, unless it does not pay; then the entry's own bytes, written from
    // where they are (the state outlives the encode) and hashed once.
    const void* frame = raw;
    size_t csize = raw_size;
    frame_codec codec = frame_codec::raw;
    if (compression_pays(raw, raw_size)) {
      std::vector<uint8_t>& buf = impl_->buf[which];
      const size_t bound = ZSTD_compressBound(raw_size);
      if (buf.size() < bound) {
        settle();  // the buffer may be the one a write in flight still reads
        buf.resize(bound);
      }
      const size_t n = MSOMNI_CHECK_ZSTD(ZSTD_compress2(impl_->cctx, buf.data(), buf.size(), raw, raw_size));
      if (n < raw_size) {
        which ^= 1;
        frame = buf.data();
        csize = n;
        codec = frame_codec::zstd;
      }
    }
    const uint64_t frame_xxh3 = codec == frame_codec::raw ? raw_xxh3 : XXH3_64bits(frame, csize);
    const uint64_t offset = sum.bytes;
    emit(frame, csize, csize >= async_write_min_bytes);
    put(index, static_cast<uint16_t>(name.size()));
    index += name;
    put(index, static_cast<uint8_t>(kind));
    put(index, static_cast<uint8_t>(codec));
    put(index, static_cast<uint8_t>(shape.size()));
    for (int64_t d : shape) put(index, d);
    put(index, offset);
    put(index, static_cast<uint64_t>(csize));
    put(index, static_cast<uint64_t>(raw_size));
    put(index, frame_xxh3);
    put(index, raw_xxh3);
    sum.stored_raw += codec == frame_codec::raw;
    sum.raw_bytes += raw_size;
    ++sum.entries;
  };
  for (const auto& t : state.tensors)
    add_entry(t.name, entry_kind::tensor_f32, t.shape, t.values.data(),
              t.values.size() * sizeof(float));
  for (const auto& b : state.blobs)
    add_entry(b.name, entry_kind::blob, {}, b.bytes.data(), b.bytes.size());
  const uint64_t index_offset = sum.bytes;
  emit(index.data(), index.size(), false);
  XXH3_64bits_update(meta_hash.get(), index.data(), index.size());
  std::string footer;
  put(footer, index_offset);
  put(footer, static_cast<uint64_t>(index.size()));
  put(footer, static_cast<uint64_t>(XXH3_64bits_digest(meta_hash.get())));
  footer.append(footer_magic, sizeof footer_magic);
  emit(footer.data(), footer.size(), false);
  sum.xxh3 = XXH3_64bits_digest(file_hash);
  return sum;
}

shard_layout read_shard_layout(std::span<const uint8_t> bytes, const std::string& where) {
  if (bytes.size() < header_bytes + footer_bytes)
    throw checkpoint_error(where + ": " + std::to_string(bytes.size()) +
                           " bytes is too short for a shard (torn write?)");
  const uint8_t* foot = bytes.data() + bytes.size() - footer_bytes;
  if (std::memcmp(foot + 24, footer_magic, 8) != 0)
    throw checkpoint_error(where + ": footer magic missing (torn or not a shard)");
  if (std::memcmp(bytes.data(), header_magic, 8) != 0)
    throw checkpoint_error(where + ": header magic missing (not a shard)");
  uint64_t index_offset, index_size, meta_xxh3;
  std::memcpy(&index_offset, foot, 8);
  std::memcpy(&index_size, foot + 8, 8);
  std::memcpy(&meta_xxh3, foot + 16, 8);
  const uint64_t frames_end = bytes.size() - footer_bytes;
  if (index_offset < header_bytes || index_offset > frames_end ||
      index_size != frames_end - index_offset)
    throw checkpoint_error(where + ": footer index bounds out of range");
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  XXH3_64bits_update(h, bytes.data(), header_bytes);
  XXH3_64bits_update(h, bytes.data() + index_offset, index_size);
  const uint64_t actual = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  if (actual != meta_xxh3)
    throw checkpoint_error(where + ": header/index checksum mismatch: expected " + hex64(meta_xxh3) +
                           ", actual " + hex64(actual));
  shard_layout out;
  reader hr(bytes.subspan(8, header_bytes - 8), where);
  const auto version = hr.get<uint32_t>();
  if (version < oldest_read_version || version > format_version)
    throw checkpoint_error(where + ": shard format version " + std::to_string(version) + ", this build reads " +
                           std::to_string(oldest_read_version) + " to " + std::to_string(format_version));
  out.rank = hr.get<uint32_t>();
  out.step = hr.get<uint64_t>();
  const auto count = hr.get<uint32_t>();
  reader r(bytes.subspan(index_offset, index_size), where);
  for (uint32_t i = 0; i < count; ++i) {
    entry_index e;
    e.name = r.str(r.get<uint16_t>());
    const auto kind = r.get<uint8_t>();
    if (kind > 1) throw checkpoint_error(where + ": entry '" + e.name + "' has unknown kind");
    e.kind = static_cast<entry_kind>(kind);
    if (version >= 2) {
      const auto codec = r.get<uint8_t>();
      if (codec > 1) throw checkpoint_error(where + ": entry '" + e.name + "' has unknown codec " + std::to_string(codec));
      e.codec = static_cast<frame_codec>(codec);
    }
    const auto ndim = r.get<uint8_t>();
    for (uint8_t d = 0; d < ndim; ++d) e.shape.push_back(r.get<int64_t>());
    e.offset = r.get<uint64_t>();
    e.compressed_size = r.get<uint64_t>();
    e.raw_size = r.get<uint64_t>();
    e.frame_xxh3 = r.get<uint64_t>();
    e.raw_xxh3 = r.get<uint64_t>();
    if (e.offset < header_bytes || e.offset > index_offset ||
        e.compressed_size > index_offset - e.offset)
      throw checkpoint_error(where + ": entry '" + e.name + "' frame out of bounds");
    if (e.codec == frame_codec::raw && (e.compressed_size != e.raw_size || e.frame_xxh3 != e.raw_xxh3))
      throw checkpoint_error(where + ": entry '" + e.name + "' is stored raw but its sizes or checksums differ");
    out.entries.push_back(std::move(e));
  }
  if (!r.done()) throw checkpoint_error(where + ": trailing bytes after the index");
  return out;
}

rank_state decode_shard(std::span<const uint8_t> bytes, const std::string& where) {
  const shard_layout layout = read_shard_layout(bytes, where);
  rank_state state;
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  try {
    for (const auto& e : layout.entries) {
      const uint8_t* frame = bytes.data() + e.offset;
      const uint64_t fh = XXH3_64bits(frame, e.compressed_size);
      if (fh != e.frame_xxh3)
        throw checkpoint_error(where + ": entry '" + e.name + "' frame checksum mismatch: expected " +
                               hex64(e.frame_xxh3) + ", actual " + hex64(fh));
      std::vector<uint8_t> raw(e.raw_size);
      if (e.codec == frame_codec::raw) {
        if (e.raw_size) std::memcpy(raw.data(), frame, e.raw_size);  // its checksum is the frame's, checked above
      } else {
        const size_t n = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), frame, e.compressed_size);
        if (ZSTD_isError(n) || n != e.raw_size)
          throw checkpoint_error(where + ": entry '" + e.name + "' does not decompress to " +
                                 std::to_string(e.raw_size) + " bytes" +
                                 (ZSTD_isError(n) ? std::string(": ") + ZSTD_getErrorName(n) : ""));
      }
      const uint64_t rh = e.codec == frame_codec::raw ? fh : XXH3_64bits(raw.data(), raw.size());
      if (rh != e.raw_xxh3)
        throw checkpoint_error(where + ": entry '" + e.name + "' content checksum mismatch: expected " +
                               hex64(e.raw_xxh3) + ", actual " + hex64(rh));
      if (e.kind == entry_kind::tensor_f32) {
        if (e.raw_size % sizeof(float) != 0)
          throw checkpoint_error(where + ": tensor '" + e.name + "' size not a multiple of 4");
        tensor_entry t{e.name, e.shape, std::vector<float>(e.raw_size / sizeof(float))};
        std::memcpy(t.values.data(), raw.data(), raw.size());
        state.tensors.push_back(std::move(t));
      } else {
        state.blobs.push_back({e.name, std::move(raw)});
      }
    }
  } catch (...) {
    ZSTD_freeDCtx(dctx);
    throw;
  }
  ZSTD_freeDCtx(dctx);
  return state;
}

}  // namespace msomni::ckpt
