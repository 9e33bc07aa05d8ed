// Mutual authentication of two ucx_nodes that share a job secret, at the HELLO exchange:
// each side proves knowledge of the secret without sending it, over nonces both chose, so
// a recorded exchange cannot be replayed and one side's proof cannot be reflected as the
// other's. Pure (no UCX): ucx_node drives it, the unit tests drive it directly.
//
//   connecting side                          listening side
//   challenge {nonce_c, name_c}        -->   (no secret here: refused)
//                                      <--   challenge_reply {nonce_s, proof_s, name_s}
//   proof_s checks: up; else refused
//   proof {proof_c}                    -->   proof_c checks: up; else refused
//
//   proof_s = HMAC-SHA256(secret, "msomni-hello-server" | nonce_c | nonce_s | name_c | name_s)
//   proof_c = HMAC-SHA256(secret, "msomni-hello-client" | nonce_c | nonce_s | name_c | name_s)
//
// It authenticates the peer at connection time; it does not encrypt, so it assumes nobody
// can sit between two nodes and rewrite their traffic (no TLS on the job's network).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace msomni::transport {

inline constexpr size_t auth_nonce_size = 32;
inline constexpr size_t auth_proof_size = 32;
using auth_nonce = std::array<std::byte, auth_nonce_size>;
using auth_proof = std::array<std::byte, auth_proof_size>;

// Fresh random bytes from the system's CSPRNG; throws when it cannot be read.
auth_nonce auth_make_nonce();

// What the listening side (server) and the connecting side (client) each prove.
auth_proof auth_server_proof(const std::string& secret, const auth_nonce& nonce_c, const auth_nonce& nonce_s,
                             const std::string& name_c, const std::string& name_s);
auth_proof auth_client_proof(const std::string& secret, const auth_nonce& nonce_c, const auth_nonce& nonce_s,
                             const std::string& name_c, const std::string& name_s);

// Constant-time comparison of a received proof with the expected one.
bool auth_same_proof(const auth_proof& a, std::span<const std::byte> received);

// Payloads of the three handshake frames. Decoders return nullopt on any malformed input.
struct auth_challenge {
  auth_nonce nonce{};
  std::string name;
};
struct auth_challenge_reply {
  auth_nonce nonce{};
  auth_proof proof{};
  std::string name;
};
std::vector<std::byte> auth_encode(const auth_challenge& c);
std::vector<std::byte> auth_encode(const auth_challenge_reply& r);
std::optional<auth_challenge> auth_decode_challenge(std::span<const std::byte> payload);
std::optional<auth_challenge_reply> auth_decode_challenge_reply(std::span<const std::byte> payload);

}  // namespace msomni::transport
