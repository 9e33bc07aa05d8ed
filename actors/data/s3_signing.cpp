// S3 request signing: AWS Signature Version 4 and the process's credentials it signs with
// (see remote_io.hpp).
#include "remote_io.hpp"

#include "remote_text.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace msomni::data {
namespace {

using remote_text::env_or;
using remote_text::lower;
using remote_text::trim;

std::string hex(const unsigned char* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = d[p[i] >> 4];
    out[2 * i + 1] = d[p[i] & 15];
  }
  return out;
}

std::string hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(), out,
       &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

std::string uri_encode(const std::string& s, bool encode_slash) {
  static const char* d = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encode_slash)) {
      out.push_back(char(c));
    } else {
      out.push_back('%');
      out.push_back(d[c >> 4]);
      out.push_back(d[c & 15]);
    }
  }
  return out;
}

std::string sha256_hex(const std::string& data) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return hex(out, sizeof out);
}

namespace {

std::vector<std::pair<std::string, std::string>> canonical_headers(const sigv4_input& in) {
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("host", in.host);
  for (const auto& [k, v] : in.headers) h.emplace_back(lower(k), trim(v));
  std::sort(h.begin(), h.end());
  return h;
}

std::string signed_headers(const std::vector<std::pair<std::string, std::string>>& h) {
  std::string out;
  for (const auto& [k, v] : h) out += (out.empty() ? "" : ";") + k;
  return out;
}

std::string scope_of(const sigv4_input& in) {
  return in.amz_date.substr(0, 8) + "/" + in.region + "/" + in.service + "/aws4_request";
}

}  // namespace

std::string sigv4_canonical_request(const sigv4_input& in) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : in.query) q.emplace_back(uri_encode(k), uri_encode(v));
  std::sort(q.begin(), q.end());
  std::string query;
  for (const auto& [k, v] : q) query += (query.empty() ? "" : "&") + k + "=" + v;
  const auto h = canonical_headers(in);
  std::string headers;
  for (const auto& [k, v] : h) headers += k + ":" + v + "\n";
  return in.method + "\n" + in.path + "\n" + query + "\n" + headers + "\n" + signed_headers(h) + "\n" + in.payload_hash;
}

std::string sigv4_string_to_sign(const sigv4_input& in) {
  return "AWS4-HMAC-SHA256\n" + in.amz_date + "\n" + scope_of(in) + "\n" + sha256_hex(sigv4_canonical_request(in));
}

std::string sigv4_authorization(const sigv4_input& in, const sigv4_credentials& cred) {
  std::string key = hmac("AWS4" + cred.secret_key, in.amz_date.substr(0, 8));
  key = hmac(key, in.region);
  key = hmac(key, in.service);
  key = hmac(key, "aws4_request");
  const std::string sig = hmac(key, sigv4_string_to_sign(in));
  return "AWS4-HMAC-SHA256 Credential=" + cred.access_key + "/" + scope_of(in) +
         ", SignedHeaders=" + signed_headers(canonical_headers(in)) +
         ", Signature=" + hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

sigv4_credentials s3_credentials() {
  const auto s = remote_io();
  sigv4_credentials c;
  if (!s.s3_credentials_file.empty()) {
    std::ifstream in(s.s3_credentials_file);
    if (!in) throw std::runtime_error("io.s3_credentials_file " + s.s3_credentials_file + " cannot be read");
    std::string line, section;
    while (std::getline(in, line)) {
      line = trim(line);
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      if (line.front() == '[' && line.back() == ']') {
        section = trim(line.substr(1, line.size() - 2));
        if (section.rfind("profile ", 0) == 0) section = trim(section.substr(8));
        continue;
      }
      if (section != s.s3_profile) continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      const auto k = lower(trim(line.substr(0, eq))), v = trim(line.substr(eq + 1));
      if (k == "aws_access_key_id") c.access_key = v;
      else if (k == "aws_secret_access_key") c.secret_key = v;
      else if (k == "aws_session_token") c.session_token = v;
    }
    if (c.access_key.empty() || c.secret_key.empty())
      throw std::runtime_error("io.s3_credentials_file " + s.s3_credentials_file + " has no aws_access_key_id and " +
                               "aws_secret_access_key in profile [" + s.s3_profile + "]");
    return c;
  }
  c.access_key = env_or("AWS_ACCESS_KEY_ID", "");
  c.secret_key = env_or("AWS_SECRET_ACCESS_KEY", "");
  c.session_token = env_or("AWS_SESSION_TOKEN", "");
  if (c.access_key.empty() || c.secret_key.empty())
    throw std::runtime_error("no S3 credentials: set io.s3_credentials_file or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  return c;
}

}  // namespace msomni::data
