// inspect_source (see inspect_source.hpp).
#include "inspect_source.hpp"

#include "scheduler_status_json.hpp"

#include "messages/catalog.hpp"

#include <caf/scoped_actor.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace msomni::cli::inspect {

namespace {

using namespace std::chrono_literals;

std::string host_of(const std::string& address) { return address.substr(0, address.rfind(':')); }

}  // namespace

json scheduler_json(const msg::scheduler_status& s) { return scheduler_status_json(s); }

inspect_source::inspect_source(std::string run_dir, std::string scheduler_info)
    : run_dir_(std::move(run_dir)), scheduler_info_(std::move(scheduler_info)),
      // Idle scheduler threads park: the console waits most of its life.
      sys_(configure_process(cfg_, 1, idle_threads::park)) {}

inspect_source::~inspect_source() {
  gw_.reset();
  hub_.reset();
}

bool inspect_source::join(std::chrono::milliseconds timeout, std::string& why) {
  const auto control_path = (std::filesystem::path(run_dir_) / "control.json").string();
  if (!run_dir_.empty() && !(control_ = read_control_file(control_path))) {
    why = "no running job found: cannot read an address and a token from " + control_path;
    return false;
  }
  if (!scheduler_info_.empty() && !(scheduler_ = read_scheduler_info(scheduler_info_))) {
    why = "cannot read \"ADDRESS TOKEN\" from " + scheduler_info_ + " (written by msomni-sched)";
    return false;
  }
  transport::ucx_node_options opt;
  opt.name = "inspect-" + std::to_string(::getpid());
  const auto& toward = control_ ? control_->address : scheduler_->address;
  try {
    opt.listen_host = transport::local_address_towards(host_of(toward));  // and loopback
  } catch (const std::exception&) {
  }
  // A silent peer counts as gone only after 60 s: the control process sends keep-alives once
  // per heartbeat (seconds); one that ends closes its endpoints and is seen at once.
  opt.keepalive_misses = static_cast<int>(std::chrono::seconds(60) / opt.keepalive_interval);
  try {
    hub_ = std::make_unique<transport::transport_hub>(opt);
    hub_->add_refusal_listener([this](const std::string&, const std::string&) { refused_ = true; });
    gw_ = std::make_unique<transport::gateway>(sys_, *hub_);
    if (control_) hub_->node().connect(control_->address, control_->token);  // the token opens the control node
    if (scheduler_) hub_->node().connect(scheduler_->address);
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto up = [&](const char* peer) { return hub_->node().is_up(peer); };
  while (std::chrono::steady_clock::now() < deadline && !refused_ &&
         !((!control_ || up("control")) && (!scheduler_ || up("sched"))))
    hub_->node().wait_up(control_ && !up("control") ? "control" : "sched", 100ms);
  if (refused_) {
    why = "refused: missing or wrong token (read it from the run directory's control.json)";
    return false;
  }
  if (control_ && !up("control")) {
    why = "the job's control process at " + control_->address + " does not answer (has it ended?)";
    return false;
  }
  if (scheduler_ && !up("sched")) {
    why = "msomni-sched at " + scheduler_->address + " does not answer";
    return false;
  }
  return true;
}

bool inspect_source::fetch(snapshot& s, std::chrono::milliseconds timeout, std::string& why) {
  json job, scheduler;
  if (control_ && !fetch_job(job, timeout, why)) return false;
  if (scheduler_ && !fetch_scheduler(scheduler, timeout, why)) return false;
  s.job = std::move(job);
  s.scheduler = std::move(scheduler);
  return true;
}

bool inspect_source::fetch_job(json& out, std::chrono::milliseconds timeout, std::string& why) {
  if (!hub_->node().is_up("control")) {
    why = "the job's control process at " + control_->address + " stopped answering (has it ended?)";
    return false;
  }
  const char* user = std::getenv("USER");
  msg::control_request req{control_->token, "inspect", 0, 0, std::string("inspect:") + (user ? user : "?")};
  bool ok = false;
  caf::scoped_actor self{sys_};
  self->request(gw_->remote_actor<msg::orchestrator_actor>("control", "orchestrator"), timeout, req)
      .receive(
          [&](const msg::control_reply& r) {
            if (!r.ok) {
              why = r.text;
              return;
            }
            out = json::parse(r.json, nullptr, /*allow_exceptions=*/false);
            ok = out.is_object();
            if (!ok) why = "the job's inspect reply is not a JSON object";
          },
          [&](const caf::error& e) { why = "no reply from the job: " + sys_.render(e) + " (has it ended?)"; });
  return ok;
}

bool inspect_source::fetch_scheduler(json& out, std::chrono::milliseconds timeout, std::string& why) {
  if (!hub_->node().is_up("sched")) {
    why = "msomni-sched at " + scheduler_->address + " stopped answering";
    return false;
  }
  bool ok = false;
  caf::scoped_actor self{sys_};
  self->request(gw_->remote_actor<msg::scheduler_actor>("sched", "scheduler-" + scheduler_->token), timeout,
                msg::scheduler_status_request{"inspect"})
      .receive(
          [&](const msg::scheduler_status& s) {
            out = scheduler_json(s);
            ok = true;
          },
          [&](const caf::error& e) {
            why = "no answer from msomni-sched (" + sys_.render(e) + "); is the token in " + scheduler_info_ + " current?";
          });
  return ok;
}

}  // namespace msomni::cli::inspect
