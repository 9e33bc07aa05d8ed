// Member indexes to and from the cache's text (see member_index_text.hpp).
#include "member_index_text.hpp"

#include <sstream>

namespace msomni::data {

std::string serialize(const object_key& k, const tar_listing& l) {
  std::ostringstream out;
  out << "msomni-index 1\n" << k.size << "\n" << k.etag << "\n";
  out << l.bad_header_runs << " " << (l.truncated ? 1 : 0) << " " << l.members.size() << "\n";
  for (const auto& m : l.members) out << m.data_offset << " " << m.size << " " << m.name << "\n";
  return out.str();
}

std::shared_ptr<const tar_listing> parse_index(const object_key& k, const std::string& text) {
  std::istringstream in(text);
  std::string line, size, etag;
  if (!std::getline(in, line) || line != "msomni-index 1" || !std::getline(in, size) || !std::getline(in, etag))
    return nullptr;
  if (size != std::to_string(k.size) || etag != k.etag) return nullptr;
  auto l = std::make_shared<tar_listing>();
  size_t count = 0;
  int truncated = 0;
  if (!(in >> l->bad_header_runs >> truncated >> count)) return nullptr;
  l->truncated = truncated != 0;
  std::getline(in, line);
  for (size_t i = 0; i < count; ++i) {
    tar_member m;
    if (!std::getline(in, line)) return nullptr;
    std::istringstream ls(line);
    if (!(ls >> m.data_offset >> m.size)) return nullptr;
    ls.get();
    std::getline(ls, m.name);
    if (m.data_offset + m.size > k.size) return nullptr;
    l->members.push_back(std::move(m));
  }
  return l;
}

}  // namespace msomni::data
