// The control store probe: each etcd member of [control] store asked for its status, and a
// lease granted and revoked at once (a write the raft leader must commit).
#include "health_probes.hpp"

#include "core/store_url.hpp"
#include "store/etcd_client.hpp"

namespace msomni::health {

void probe_store(const config::job_config& cfg, const health_options&, const add_fn& add) {
  store_fact f;
  f.url = cfg.control.store;
  if (!f.url.empty()) {
    std::string why;
    store::etcd_client client(parse_store_url(f.url, why), std::chrono::milliseconds(2000));
    for (const auto& m : client.status_of_members())
      f.members.push_back({m.endpoint, m.up, m.error, m.version, m.leader_id});
    try {
      client.revoke(client.grant_lease(cfg.control.lease_ttl_s));
      f.writable = true;
    } catch (const store::etcd_error& e) {
      f.write_error = e.what();
    }
  }
  add(judge_store(f));
}

}  // namespace msomni::health
