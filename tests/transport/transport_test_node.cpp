// One process of a transport integration test. Protocol with the driver (stdin/stdout):
//   -> "ADDR <name> <host:port>"        after listening
//   <- "PEER <name> <host:port>" ... "GO"
//   -> "READY"                          once every peer is up (scenario-specific)
//   -> "RESULT ok <details>" | "RESULT fail <reason>"
//   <- EOF on stdin: tear down and exit (0 = ok)
#include "collectives/ring_communicator.hpp"
#include "core/command_line.hpp"
#include "core/rng.hpp"
#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

using namespace msomni;
using namespace msomni::transport;
using namespace std::chrono_literals;

namespace {

struct peer_info {
  std::string name, address;
};

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void say(const std::string& line) {
  std::cout << line << std::endl;
}

// Replies to scale_request with a scale_reply naming this node.
caf::behavior echo_actor(caf::event_based_actor*, std::string node) {
  return {[node](const msg::scale_request& r) {
    return msg::scale_reply{r.request_id, true, node};
  }};
}

// Takes scale_request and never answers (the promise is kept, not delivered).
caf::behavior mute_actor(caf::event_based_actor* self) {
  auto kept = std::make_shared<std::vector<caf::response_promise>>();
  return {[self, kept](const msg::scale_request&) -> caf::result<msg::scale_reply> {
    kept->push_back(self->make_response_promise());
    return kept->back();
  }};
}

struct sink_state {
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> out_of_order{0};
};

// Counts heartbeats, checking seq is contiguous per sending node; answers flush requests.
caf::behavior sink_actor(caf::event_based_actor*, std::shared_ptr<sink_state> st) {
  auto next = std::make_shared<std::map<std::string, uint64_t>>();
  return {
      [st, next](const msg::heartbeat& hb) {
        auto& expected = (*next)[hb.node];
        if (hb.seq != expected) st->out_of_order++;
        expected = hb.seq + 1;
        st->received++;
      },
      [st](const msg::scale_request& r) { return msg::scale_reply{r.request_id, true, std::to_string(st->received.load())}; },
  };
}

std::vector<float> pattern(size_t n, int rank, uint64_t salt) {
  std::vector<float> v(n);
  auto g = rng_stream::derive(salt, "allreduce", rank);
  for (auto& x : v) x = static_cast<float>(static_cast<int>(g.below(2001)) - 1000);  // exact in fp32 sums
  return v;
}

std::string check_allreduce(ring_communicator& comm, const std::vector<int>& ranks_alive, size_t n, uint64_t salt) {
  auto data = pattern(n, comm.rank(), salt);
  std::vector<float> expect(n, 0.0f);
  for (int r = 0; r < comm.size(); ++r) {
    auto p = pattern(n, r, salt);
    for (size_t i = 0; i < n; ++i) expect[i] += p[i];
  }
  comm.all_reduce(data, reduce_op::sum);
  for (size_t i = 0; i < n; ++i)
    if (data[i] != expect[i])
      return "sum mismatch at " + std::to_string(i) + " of " + std::to_string(n) + ": " +
             std::to_string(data[i]) + " != " + std::to_string(expect[i]);
  auto mean = pattern(n, comm.rank(), salt);
  comm.all_reduce(mean, reduce_op::mean);
  for (size_t i = 0; i < n; ++i)
    if (mean[i] != expect[i] * (1.0f / comm.size())) return "mean mismatch at " + std::to_string(i);
  (void)ranks_alive;
  return {};
}

// Whether same-host members read each other's memory (--same-host), for every communicator.
bool g_same_host = true;

std::string expect_backend(const ring_communicator& comm) {
  const std::string want = g_same_host ? "same-host" : "ucx-ring";
  return comm.backend() == want ? std::string() : "backend " + std::string(comm.backend()) + ", not " + want;
}

std::string run_allreduce(transport_hub& hub, const std::vector<std::string>& members, uint64_t epoch) {
  ring_communicator comm(hub, members, epoch, {.same_host = g_same_host});
  if (auto err = expect_backend(comm); !err.empty()) return err;
  const std::vector<size_t> sizes = {1, 2, 3, 5, 7, 1000, 4099, (1 << 18) + 1, size_t{16} << 20};
  for (size_t k = 0; k < sizes.size(); ++k)
    if (auto err = check_allreduce(comm, {}, sizes[k], 100 * epoch + k); !err.empty()) return err;
  // Interleaved as a rank's checkpoint commit does: a small broadcast from every member in
  // turn, then a small all-reduce; a member that ran ahead would see another's next step.
  for (int round = 0; round < 200; ++round) {
    for (int root = 0; root < comm.size(); ++root) {
      std::array<uint64_t, 7> packed{};
      if (root == comm.rank()) packed.fill(uint64_t(round) * 1000 + uint64_t(root));
      comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(packed)), root);
      for (auto v : packed)
        if (v != uint64_t(round) * 1000 + uint64_t(root)) return "interleaved broadcast " + std::to_string(round) + " got " + std::to_string(v);
    }
    std::vector<float> flags(size_t(comm.size()), 0.0f);
    flags[size_t(comm.rank())] = float(round % 3);
    comm.all_reduce(flags, reduce_op::sum);
    for (auto v : flags)
      if (v != float(round % 3)) return "interleaved all-reduce " + std::to_string(round) + " got " + std::to_string(v);
  }
  std::vector<std::byte> blob(1 << 20);
  if (comm.rank() == 0)
    for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<std::byte>(i * 7 + 3);
  comm.broadcast(blob, 0);
  for (size_t i = 0; i < blob.size(); ++i)
    if (blob[i] != static_cast<std::byte>(i * 7 + 3)) return "broadcast mismatch at " + std::to_string(i);
  return {};
}

// The same inputs (fractions: every order of the sum rounds differently) through the UCX ring
// and through the same-host path: the results must be the same bits. `digest` gets an
// FNV-1a hash of all results, which must also be equal on every member.
std::string compare_paths(transport_hub& hub, const std::vector<std::string>& members, uint64_t& digest) {
  const std::vector<size_t> sizes = {1, 3, 1000, 4099, (size_t{1} << 20) + 5, (size_t{3} << 20) + 1};
  std::vector<std::vector<float>> over_ucx, same_host;
  auto inputs = [&](int rank) {
    std::vector<std::vector<float>> all;
    for (size_t k = 0; k < sizes.size(); ++k) {
      auto g = rng_stream::derive(900 + k, "bits", rank);
      std::vector<float> v(sizes[k]);
      for (auto& x : v) x = static_cast<float>(g.uniform() * 2.0 - 1.0) * 1e3f;
      all.push_back(std::move(v));
    }
    return all;
  };
  {
    ring_communicator ring(hub, members, 1, {.same_host = false});
    if (ring.backend() != std::string("ucx-ring")) return "the UCX ring runs as " + std::string(ring.backend());
    over_ucx = inputs(ring.rank());
    for (auto& v : over_ucx) ring.all_reduce(v, reduce_op::sum);
  }
  ring_communicator direct(hub, members, 2, {.same_host = true});
  if (direct.backend() != std::string("same-host")) return "no same-host path: " + std::string(direct.backend());
  same_host = inputs(direct.rank());
  for (auto& v : same_host) direct.all_reduce(v, reduce_op::sum);
  digest = 1469598103934665603ull;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (std::memcmp(over_ucx[k].data(), same_host[k].data(), sizes[k] * sizeof(float)) != 0)
      return "the paths differ at " + std::to_string(sizes[k]) + " floats";
    for (auto b : std::as_bytes(std::span(same_host[k]))) digest = (digest ^ uint64_t(b)) * 1099511628211ull;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  std::string name, scenario;
  bool shared_memory = true;
  CLI::App app{"One process of a transport integration test (driven over stdin/stdout).", "transport_test_node"};
  command_line::set_conventions(app);
  app.add_option("--name", name, "this node's name")->required();
  app.add_option("--scenario", scenario, "request | ordering | bulk | allreduce | same_bits | kill | kill_busy | request_down");
  app.add_option_function<std::string>(
         "--same-host", [&](const std::string& v) { g_same_host = v == "1"; },
         "1: same-host members read each other's memory (ring_options::same_host); 0: UCX frames")
      ->check(CLI::IsMember({"0", "1"}))
      ->default_str("1");
  app.add_option_function<std::string>(
         "--shared-memory", [&](const std::string& v) { shared_memory = v == "1"; },
         "0: same-host peers over TCP with UCX peer error mode")
      ->check(CLI::IsMember({"0", "1"}))
      ->default_str("1");
  if (const auto rc = command_line::parse(app, argc, argv)) return *rc;
  caf::actor_system_config cfg;
  register_catalog(cfg);
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};

  ucx_node_options opt;
  opt.name = name;
  opt.keepalive_interval = 200ms;
  opt.keepalive_misses = 5;
  opt.shared_memory = shared_memory;  // 0: same-host peers over TCP with UCX peer error mode
  transport_hub hub(opt);
  gateway gw(sys, hub);

  // Bulk receiver: one 64 MiB pattern check.
  std::vector<std::byte> bulk_buf;
  std::promise<std::string> bulk_result;
  hub.on_bulk(
      [&](const std::string&, const frame_header& h) {
        bulk_buf.resize(h.payload_size);
        return bulk_buf.data();
      },
      [&](const std::string& peer, const frame_header& h, std::byte* buf, bool ok) {
        if (!ok) return bulk_result.set_value("bulk transfer failed");
        auto g = rng_stream::derive(h.a, "bulk");
        for (size_t i = 0; i < h.payload_size; i += 8) {
          uint64_t v = g.next();
          if (std::memcmp(buf + i, &v, std::min<size_t>(8, h.payload_size - i)) != 0)
            return bulk_result.set_value("bulk byte mismatch at " + std::to_string(i));
        }
        bulk_result.set_value("");
      });

  // Publish before announcing the address: a peer may send the moment it sees us.
  auto sink_st = std::make_shared<sink_state>();
  gw.publish_dynamic("echo", sys.spawn(echo_actor, name));
  gw.publish_dynamic("mute", sys.spawn(mute_actor));
  gw.publish_dynamic("sink", sys.spawn(sink_actor, sink_st));
  say("ADDR " + name + " " + hub.node().address());
  std::vector<peer_info> peers;
  for (std::string line; std::getline(std::cin, line) && line != "GO";) {
    std::istringstream in(line);
    std::string tag;
    peer_info p;
    in >> tag >> p.name >> p.address;
    if (tag == "PEER" && p.name != name) peers.push_back(p);
  }
  for (const auto& p : peers)
    if (p.name < name) hub.node().connect(p.address);  // one connection per pair
  for (const auto& p : peers)
    if (!hub.node().wait_up(p.name, 10s)) {
      say("RESULT fail peer " + p.name + " never came up");
      return 1;
    }
  std::vector<std::string> members{name};
  for (const auto& p : peers) members.push_back(p.name);
  std::sort(members.begin(), members.end());
  const bool leader = members.front() == name;

  std::string error;
  std::string details;
  caf::scoped_actor self{sys};
  say("READY");

  if (scenario == "request") {
    // Every node asks every other node's echo actor and checks the typed reply.
    for (const auto& p : peers) {
      auto echo = gw.remote_dynamic(p.name, "echo");
      for (uint64_t i = 0; i < 20 && error.empty(); ++i)
        self->request(echo, 5s, msg::scale_request{i, 1, 0, name})
            .receive([&](const msg::scale_reply& r) {
              if (r.request_id != i || r.reason != p.name) error = "wrong reply from " + p.name;
            },
                     [&](caf::error& e) { error = "request to " + p.name + " failed: " + sys.render(e); });
    }
    details = "forwarded " + std::to_string(gw.counters().forwarded.load());
  } else if (scenario == "ordering") {
    // Every non-leader sends 100k heartbeats to the leader's sink, flushing every 10k.
    const uint64_t total = 100000;
    if (!leader) {
      auto sink = gw.remote_dynamic(members.front(), "sink");
      for (uint64_t i = 0; i < total && error.empty(); ++i) {
        self->send(sink, msg::heartbeat{name, 0, 1, i, 0});
        if ((i + 1) % 10000 == 0)
          self->request(sink, 30s, msg::scale_request{i, 0, 0, name})
              .receive([](const msg::scale_reply&) {}, [&](caf::error& e) { error = "flush failed: " + sys.render(e); });
      }
    } else {
      const uint64_t want = total * peers.size();
      const auto deadline = std::chrono::steady_clock::now() + 60s;
      while (sink_st->received < want && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
      if (sink_st->received != want) error = "received " + std::to_string(sink_st->received.load()) + " of " + std::to_string(want);
      if (sink_st->out_of_order) error += " out of order: " + std::to_string(sink_st->out_of_order.load());
      details = "received " + std::to_string(sink_st->received.load()) + " in order";
    }
  } else if (scenario == "bulk") {
    // The last node sends 64 MiB + 3 bytes to the leader without the message serializer.
    const size_t n = (size_t{64} << 20) + 3;
    if (name == members.back()) {
      std::vector<std::byte> data(n);
      auto g = rng_stream::derive(77, "bulk");
      for (size_t i = 0; i < n; i += 8) {
        uint64_t v = g.next();
        std::memcpy(data.data() + i, &v, std::min<size_t>(8, n - i));
      }
      std::promise<bool> sent;
      hub.node().send_bulk(members.front(), {frame_kind::bulk, 0, 77, 1, 0, n}, data.data(),
                           [&](bool ok) { sent.set_value(ok); });
      if (!sent.get_future().get()) error = "send_bulk failed";
    } else if (leader) {
      auto f = bulk_result.get_future();
      if (f.wait_for(30s) != std::future_status::ready) error = "bulk never arrived";
      else error = f.get();
      details = "64 MiB + 3 bytes verified";
    }
  } else if (scenario == "allreduce") {
    error = run_allreduce(hub, members, 1);
    details = "sizes 1..16M floats, sum+mean+broadcast over " + std::to_string(members.size()) + (g_same_host ? " same-host" : " ucx-ring");
  } else if (scenario == "same_bits") {
    uint64_t digest = 0;
    error = compare_paths(hub, members, digest);
    details = "DIGEST " + std::to_string(digest);
  } else if (scenario == "kill") {
    // Everyone monitors every peer's echo; the driver SIGKILLs the last node.
    std::vector<caf::actor> watched;
    for (const auto& p : peers) {
      watched.push_back(gw.remote_dynamic(p.name, "echo"));
      self->monitor(watched.back());
    }
    if (name != members.back()) {
      say("ARMED");
      bool got = false;
      self->receive([&](caf::down_msg& d) {
        got = true;
        say("DOWN " + std::to_string(wall_ms()) + " " + sys.render(d.reason));
      },
                    caf::after(10s) >> [&] { error = "no down message within 10 s"; });
      if (got) {
        std::vector<std::string> survivors(members.begin(), members.end() - 1);
        for (int tries = 0; tries < 50 && hub.node().is_up(members.back()); ++tries) std::this_thread::sleep_for(20ms);
        error = run_allreduce(hub, survivors, 2);
        details = "rebuilt ring of " + std::to_string(survivors.size());
      }
    } else {
      say("ARMED");
      std::this_thread::sleep_for(60s);  // killed by the driver before this ends
    }
  } else if (scenario == "kill_busy") {
    // Everyone all-reduces 16 MiB in a loop; the driver SIGKILLs the last node mid-transfer.
    // Survivors must fail their collective (not hang, not crash), then rebuild without it.
    // A member down supersedes epoch 1 everywhere, as the elastic layer does on a failure.
    hub.add_peer_listener([&](const std::string&, bool up, const std::string& why) {
      if (!up) hub.mailbox().abort_below(2, why);
    });
    try {
      // Freed the moment the collective throws: the ring must have settled its transfers.
      std::vector<float> data(size_t{4} << 20, 1.0f);
      ring_communicator comm(hub, members, 1, {.same_host = g_same_host});
      if (auto err = expect_backend(comm); !err.empty()) throw collective_error(err);
      for (int i = 0;; ++i) {
        comm.all_reduce(data, reduce_op::mean);
        if (i == 2) say("ARMED");
      }
    } catch (const collective_error& e) {
      say("FAILED " + std::to_string(wall_ms()) + " " + e.what());
    }
    std::vector<std::string> survivors(members.begin(), members.end() - 1);
    for (int tries = 0; tries < 150 && hub.node().is_up(members.back()); ++tries) std::this_thread::sleep_for(20ms);
    error = run_allreduce(hub, survivors, 2);
    details = "failed mid-transfer, rebuilt ring of " + std::to_string(survivors.size());
  } else if (scenario == "request_down") {
    // The first node asks the last node's mute actor with a 60 s timeout; the driver SIGKILLs
    // the last node: the request fails as soon as the node is down, not after 60 s.
    if (name != members.back()) {
      auto mute = gw.remote_dynamic(members.back(), "mute");
      bool asked = false;
      self->request(mute, 60s, msg::scale_request{1, 1, 0, name})
          .receive([&](const msg::scale_reply&) { error = "a mute actor answered"; },
                   [&](caf::error& e) {
                     asked = true;
                     say("FAILED " + std::to_string(wall_ms()) + " " + sys.render(e));
                     if (e != caf::sec::request_receiver_down) error = "failed with " + sys.render(e);
                   });
      if (!asked && error.empty()) error = "no answer";
      details = "failed " + std::to_string(gw.counters().requests_failed.load()) + " request(s) at once";
    } else {
      std::this_thread::sleep_for(60s);  // killed by the driver before this ends
    }
  } else {
    error = "unknown scenario " + scenario;
  }
  say(error.empty() ? "RESULT ok " + details : "RESULT fail " + error);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return error.empty() ? 0 : 1;
}
