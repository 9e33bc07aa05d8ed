// message_accounting (see accounted_actor.hpp).
#include "metrics/accounted_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/type_nr.hpp>
#include <caf/uniform_type_info_map.hpp>


namespace msomni::metrics {

void message_accounting::account_as(std::string name, std::shared_ptr<metrics_registry> registry) {
  registry_ = std::move(registry);
  name_ = std::move(name);
  types_.clear();
  types_.reserve(max_message_types + 1);  // entries are held by reference while a message runs
  if (!registry_) return;
  depth_ = &registry_->gauge("msomni_actor_mailbox_depth", {{"actor", name_}});
  handling_ = &registry_->histogram("msomni_actor_handling_seconds", {{"actor", name_}});
}

message_accounting::per_type& message_accounting::add_entry(per_type key, const std::string& message) {
  key.messages = &registry_->counter("msomni_actor_messages_total", {{"actor", name_}, {"message", message}});
  key.seconds = &registry_->counter("msomni_actor_message_seconds_total", {{"actor", name_}, {"message", message}});
  types_.push_back(key);
  return types_.back();
}

message_accounting::per_type& message_accounting::entry_for(const caf::mailbox_element& x, caf::actor_system& sys) {
  const auto& content = x.content();
  per_type key;
  if (content.size() == 0) {
    key.type_nr = 0;
  } else {
    const auto rtti = content.type(0);
    key.type_nr = rtti.first;
    key.type = rtti.second;
    if (key.type_nr == caf::type_nr<caf::atom_value>::value)
      key.atom = static_cast<uint64_t>(content.get_as<caf::atom_value>(0));
  }
  for (auto& t : types_)
    if (t.type_nr == key.type_nr && t.type == key.type && t.atom == key.atom) return t;
  if (types_.size() >= max_message_types) {
    for (auto& t : types_)
      if (t.type_nr == 0 && t.type == nullptr && t.atom == ~uint64_t{0}) return t;
    per_type other;
    other.atom = ~uint64_t{0};
    return add_entry(other, "other");
  }
  std::string message = "empty";
  if (content.size() != 0) {
    if (key.type_nr == caf::type_nr<caf::atom_value>::value)
      message = "atom:" + caf::to_string(static_cast<caf::atom_value>(key.atom));
    else
      message = sys.types().portable_name(key.type_nr, key.type);
    // CAF names catalog types by their C++ name; the catalog's namespace says nothing.
    if (const auto pos = message.rfind("::"); pos != std::string::npos) message = message.substr(pos + 2);
  }
  return add_entry(key, message);
}

}  // namespace msomni::metrics
