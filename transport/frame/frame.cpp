// Frame header and actor envelope encoding (see frame.hpp).
#include "frame/frame.hpp"

#include <array>
#include <cstring>

namespace msomni::transport {

namespace {

template <class T>
void put(std::byte* at, T v) {
  std::memcpy(at, &v, sizeof v);  // hosts are little endian (x86_64, aarch64)
}

template <class T>
T get(const std::byte* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

bool known_kind(uint8_t k) { return k >= 1 && k <= 9; }

uint64_t payload_bound(frame_kind k) {
  switch (k) {
    case frame_kind::hello: return max_node_name;
    case frame_kind::challenge: return 32 + max_node_name;       // auth_nonce_size + name
    case frame_kind::challenge_reply: return 64 + max_node_name;  // nonce + proof + name
    case frame_kind::proof: return 32;                            // auth_proof_size
    case frame_kind::keepalive:
    case frame_kind::goodbye: return 0;
    case frame_kind::actor_message: return max_actor_payload;
    case frame_kind::bulk:
    case frame_kind::collective: return max_bulk_payload;
  }
  return 0;
}

}  // namespace

const char* to_string(decode_error e) {
  switch (e) {
    case decode_error::none: return "none";
    case decode_error::short_header: return "short_header";
    case decode_error::bad_magic: return "bad_magic";
    case decode_error::bad_version: return "bad_version";
    case decode_error::unknown_kind: return "unknown_kind";
    case decode_error::payload_too_large: return "payload_too_large";
    case decode_error::payload_size_mismatch: return "payload_size_mismatch";
    case decode_error::bad_envelope: return "bad_envelope";
  }
  return "?";
}

std::array<std::byte, frame_header_size> encode_header(const frame_header& h) {
  std::array<std::byte, frame_header_size> out{};
  put<uint32_t>(out.data(), frame_magic);
  put<uint8_t>(out.data() + 4, frame_version);
  put<uint8_t>(out.data() + 5, static_cast<uint8_t>(h.kind));
  put<uint16_t>(out.data() + 6, h.flags);
  put<uint64_t>(out.data() + 8, h.a);
  put<uint64_t>(out.data() + 16, h.b);
  put<uint64_t>(out.data() + 24, h.c);
  put<uint64_t>(out.data() + 32, h.payload_size);
  return out;
}

std::optional<frame_header> decode_header(std::span<const std::byte> bytes, decode_error& why) {
  why = decode_error::none;
  if (bytes.size() != frame_header_size) {
    why = decode_error::short_header;
    return std::nullopt;
  }
  const auto* p = bytes.data();
  if (get<uint32_t>(p) != frame_magic) {
    why = decode_error::bad_magic;
    return std::nullopt;
  }
  if (get<uint8_t>(p + 4) != frame_version) {
    why = decode_error::bad_version;
    return std::nullopt;
  }
  const auto kind = get<uint8_t>(p + 5);
  if (!known_kind(kind)) {
    why = decode_error::unknown_kind;
    return std::nullopt;
  }
  frame_header h;
  h.kind = static_cast<frame_kind>(kind);
  h.flags = get<uint16_t>(p + 6);
  h.a = get<uint64_t>(p + 8);
  h.b = get<uint64_t>(p + 16);
  h.c = get<uint64_t>(p + 24);
  h.payload_size = get<uint64_t>(p + 32);
  if (h.payload_size > payload_bound(h.kind)) {
    why = decode_error::payload_too_large;
    return std::nullopt;
  }
  return h;
}

std::vector<std::byte> encode_envelope(std::string_view receiver_name,
                                       std::span<const std::byte> message_bytes) {
  std::vector<std::byte> out(2 + receiver_name.size() + message_bytes.size());
  put<uint16_t>(out.data(), static_cast<uint16_t>(receiver_name.size()));
  std::memcpy(out.data() + 2, receiver_name.data(), receiver_name.size());
  if (!message_bytes.empty())
    std::memcpy(out.data() + 2 + receiver_name.size(), message_bytes.data(), message_bytes.size());
  return out;
}

std::optional<actor_envelope> decode_envelope(std::span<const std::byte> payload, decode_error& why) {
  why = decode_error::none;
  if (payload.size() < 2) {
    why = decode_error::bad_envelope;
    return std::nullopt;
  }
  const auto len = get<uint16_t>(payload.data());
  if (len > max_actor_name || 2u + len > payload.size()) {
    why = decode_error::bad_envelope;
    return std::nullopt;
  }
  actor_envelope env;
  env.receiver_name.assign(reinterpret_cast<const char*>(payload.data() + 2), len);
  env.message_bytes = payload.subspan(2 + len);
  if (env.message_bytes.empty()) {
    why = decode_error::bad_envelope;
    return std::nullopt;
  }
  return env;
}

}  // namespace msomni::transport
