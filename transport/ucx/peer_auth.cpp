// peer_auth: the HELLO handshake's proofs and payloads (see peer_auth.hpp).
#include "ucx/peer_auth.hpp"

#include "frame/frame.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>

namespace msomni::transport {

namespace {

void append(std::vector<unsigned char>& out, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  out.insert(out.end(), b, b + n);
}

// Names are length-prefixed so that ("ab", "c") and ("a", "bc") prove different things.
void append_name(std::vector<unsigned char>& out, const std::string& name) {
  const auto n = static_cast<uint16_t>(name.size());
  append(out, &n, sizeof n);
  append(out, name.data(), name.size());
}

auth_proof proof_of(const char* label, const std::string& secret, const auth_nonce& nonce_c,
                    const auth_nonce& nonce_s, const std::string& name_c, const std::string& name_s) {
  std::vector<unsigned char> msg;
  append(msg, label, std::strlen(label));
  append(msg, nonce_c.data(), nonce_c.size());
  append(msg, nonce_s.data(), nonce_s.size());
  append_name(msg, name_c);
  append_name(msg, name_s);
  auth_proof out{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg.data(), msg.size(),
            reinterpret_cast<unsigned char*>(out.data()), &len) ||
      len != out.size())
    throw std::runtime_error("peer_auth: HMAC-SHA256 failed");
  return out;
}

std::optional<std::string> name_of(std::span<const std::byte> rest) {
  if (rest.empty() || rest.size() > max_node_name) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(rest.data()), rest.size());
}

}  // namespace

auth_nonce auth_make_nonce() {
  auth_nonce n{};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) != 1)
    throw std::runtime_error("peer_auth: no random bytes for a nonce");
  return n;
}

auth_proof auth_server_proof(const std::string& secret, const auth_nonce& nonce_c, const auth_nonce& nonce_s,
                             const std::string& name_c, const std::string& name_s) {
  return proof_of("msomni-hello-server", secret, nonce_c, nonce_s, name_c, name_s);
}

auth_proof auth_client_proof(const std::string& secret, const auth_nonce& nonce_c, const auth_nonce& nonce_s,
                             const std::string& name_c, const std::string& name_s) {
  return proof_of("msomni-hello-client", secret, nonce_c, nonce_s, name_c, name_s);
}

bool auth_same_proof(const auth_proof& a, std::span<const std::byte> received) {
  return received.size() == a.size() && CRYPTO_memcmp(a.data(), received.data(), a.size()) == 0;
}

std::vector<std::byte> auth_encode(const auth_challenge& c) {
  std::vector<std::byte> out(auth_nonce_size + c.name.size());
  std::memcpy(out.data(), c.nonce.data(), auth_nonce_size);
  std::memcpy(out.data() + auth_nonce_size, c.name.data(), c.name.size());
  return out;
}

std::vector<std::byte> auth_encode(const auth_challenge_reply& r) {
  std::vector<std::byte> out(auth_nonce_size + auth_proof_size + r.name.size());
  std::memcpy(out.data(), r.nonce.data(), auth_nonce_size);
  std::memcpy(out.data() + auth_nonce_size, r.proof.data(), auth_proof_size);
  std::memcpy(out.data() + auth_nonce_size + auth_proof_size, r.name.data(), r.name.size());
  return out;
}

std::optional<auth_challenge> auth_decode_challenge(std::span<const std::byte> payload) {
  if (payload.size() <= auth_nonce_size) return std::nullopt;
  auth_challenge c;
  std::memcpy(c.nonce.data(), payload.data(), auth_nonce_size);
  auto name = name_of(payload.subspan(auth_nonce_size));
  if (!name) return std::nullopt;
  c.name = std::move(*name);
  return c;
}

std::optional<auth_challenge_reply> auth_decode_challenge_reply(std::span<const std::byte> payload) {
  constexpr size_t fixed = auth_nonce_size + auth_proof_size;
  if (payload.size() <= fixed) return std::nullopt;
  auth_challenge_reply r;
  std::memcpy(r.nonce.data(), payload.data(), auth_nonce_size);
  std::memcpy(r.proof.data(), payload.data() + auth_nonce_size, auth_proof_size);
  auto name = name_of(payload.subspan(fixed));
  if (!name) return std::nullopt;
  r.name = std::move(*name);
  return r;
}

}  // namespace msomni::transport
