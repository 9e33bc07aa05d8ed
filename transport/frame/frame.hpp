// The wire format between msomni processes. Every UCX active message carries one fixed
// 40-byte frame header (in UCX's AM header) and a payload (UCX's AM data). The decoder is
// pure and total: any byte string yields a frame or a reason, never a crash (fuzzed by
// tools/fuzz/frame_fuzzer.cpp).
//
//   offset size field
//   0      4    magic "MSOF" (0x464f534d little endian)
//   4      1    version (1)
//   5      1    kind (frame_kind)
//   6      2    flags (reserved, 0)
//   8      8    a  (actor_message: sender actor id;   bulk/collective: stream or comm epoch)
//   16     8    b  (actor_message: receiver actor id; bulk/collective: sequence)
//   24     8    c  (actor_message: CAF message id;    bulk/collective: step/chunk)
//   32     8    payload_size (bytes that follow in the AM data)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace msomni::transport {

enum class frame_kind : uint8_t {
  hello = 1,          // payload: sender's node name
  keepalive = 2,      // no payload
  actor_message = 3,  // payload: actor envelope (below)
  bulk = 4,           // payload: raw bytes, delivered into a receiver-chosen buffer
  collective = 5,     // payload: raw float chunk of a collective step
  goodbye = 6,        // clean shutdown; no "down" with an error
  // The authenticated HELLO of nodes that share a job secret (ucx/peer_auth.hpp).
  challenge = 7,        // payload: nonce, sender's node name
  challenge_reply = 8,  // payload: nonce, proof, sender's node name
  proof = 9,            // payload: proof
};

inline constexpr uint32_t frame_magic = 0x464f534du;
inline constexpr uint8_t frame_version = 1;
inline constexpr size_t frame_header_size = 40;
inline constexpr uint64_t max_actor_payload = 16u << 20;     // larger data goes the bulk path
inline constexpr uint64_t max_bulk_payload = uint64_t{1} << 34;
inline constexpr size_t max_node_name = 256;
inline constexpr size_t max_actor_name = 256;

struct frame_header {
  frame_kind kind = frame_kind::keepalive;
  uint16_t flags = 0;
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
  uint64_t payload_size = 0;
  bool operator==(const frame_header&) const = default;
};

enum class decode_error : uint8_t {
  none,
  short_header,
  bad_magic,
  bad_version,
  unknown_kind,
  payload_too_large,
  payload_size_mismatch,
  bad_envelope,
};
const char* to_string(decode_error e);

std::array<std::byte, frame_header_size> encode_header(const frame_header& h);
// Validates magic, version, kind and the payload bound for the kind.
std::optional<frame_header> decode_header(std::span<const std::byte> bytes, decode_error& why);

// actor_message payload: [u16 name length][receiver name][CAF binary message]. The name is
// empty when the receiver is addressed by actor id (frame field b).
struct actor_envelope {
  std::string receiver_name;
  std::span<const std::byte> message_bytes;
};
std::vector<std::byte> encode_envelope(std::string_view receiver_name,
                                       std::span<const std::byte> message_bytes);
std::optional<actor_envelope> decode_envelope(std::span<const std::byte> payload, decode_error& why);

}  // namespace msomni::transport
