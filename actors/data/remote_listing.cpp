// Remote shard listings: S3 ListObjectsV2 pages and http(s) shard lists (see remote_listing.hpp).
#include "remote_listing.hpp"

#include "remote_io.hpp"
#include "remote_names.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace msomni::data {
namespace {

std::string xml_unescape(std::string s) {
  static const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&#34;", "\""}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents) {
    size_t at = 0;
    while ((at = s.find(from, at)) != std::string::npos) {
      s.replace(at, std::strlen(from), to);
      at += std::strlen(to);
    }
  }
  return s;
}

// The text of the first <tag>...</tag> in [from, to) of xml; npos-safe.
std::string xml_field(const std::string& xml, const std::string& tag, size_t from = 0, size_t to = std::string::npos) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const auto a = xml.find(open, from);
  if (a == std::string::npos || (to != std::string::npos && a >= to)) return "";
  const auto b = xml.find(close, a);
  if (b == std::string::npos) return "";
  return xml_unescape(xml.substr(a + open.size(), b - a - open.size()));
}

}  // namespace

std::vector<std::string> list_s3(const std::string& uri, const std::function<void(const object_key&)>& remember) {
  const auto [bucket, key] = bucket_key(uri);
  if (ends_with(key, ".tar")) return {uri};
  std::string prefix = key;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  std::vector<std::string> out;
  std::string token;
  for (int page = 0; page < 100000; ++page) {
    std::vector<std::pair<std::string, std::string>> q{{"list-type", "2"}, {"delimiter", "/"}, {"prefix", prefix}};
    if (!token.empty()) q.emplace_back("continuation-token", token);
    std::sort(q.begin(), q.end());
    std::string query;
    for (const auto& [k, v] : q) query += (query.empty() ? "" : "&") + uri_encode(k) + "=" + uri_encode(v);
    http_request req;
    req.url = remote_io().s3_endpoint + "/" + uri_encode(bucket) + "?" + query;
    req.sign_s3 = true;
    const auto r = http_fetch(req);
    if (r.status == 404) return {};
    if (r.status != 200)
      throw std::runtime_error("listing " + uri + ": HTTP " + std::to_string(r.status) + " " +
                               xml_field(r.body, "Code") + " " + xml_field(r.body, "Message"));
    size_t at = 0;
    while ((at = r.body.find("<Contents>", at)) != std::string::npos) {
      const auto end = r.body.find("</Contents>", at);
      object_key k;
      const std::string name = xml_field(r.body, "Key", at, end);
      k.url = "s3://" + bucket + "/" + name;
      k.size = std::stoull("0" + xml_field(r.body, "Size", at, end));
      k.etag = xml_field(r.body, "ETag", at, end);
      if (ends_with(name, ".tar") && name.find('/', prefix.size()) == std::string::npos) {
        remember(k);
        out.push_back(k.url);
      }
      at = end == std::string::npos ? r.body.size() : end;
    }
    if (xml_field(r.body, "IsTruncated") != "true") break;
    token = xml_field(r.body, "NextContinuationToken");
    if (token.empty()) break;
  }
  return out;
}

std::vector<std::string> list_http(const std::string& uri) {
  if (ends_with(uri, ".tar")) return {uri};
  const std::string list = uri.back() == '/' ? uri + "shards.txt" : uri;
  http_request req;
  req.url = list;
  const auto r = http_fetch(req);
  if (r.status == 404) return {};
  if (r.status != 200) throw std::runtime_error("reading the shard list " + list + ": HTTP " + std::to_string(r.status));
  const std::string base = list.substr(0, list.rfind('/') + 1);
  std::vector<std::string> out;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    if (!ends_with(line, ".tar")) continue;
    out.push_back(line.find("://") != std::string::npos ? line : base + line);
  }
  return out;
}

}  // namespace msomni::data
