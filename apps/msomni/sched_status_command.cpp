// `msomni sched-status --scheduler-info FILE [--json]`: asks msomni-sched (address and token
// from its info file) for its queue and jobs: pending by class against the queue's bound,
// running (of which borrowed), draining, guests, free GPUs, decisions, rejections.
#include "commands.hpp"

#include "scheduler_client.hpp"

#include "messages/catalog.hpp"

#include <caf/scoped_actor.hpp>
#include <unistd.h>

#include <fstream>
#include <iostream>

namespace msomni::cli {

using namespace std::chrono_literals;

int run_sched_status(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string info;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") json = true;
    else if (args[i] == "--scheduler-info" && i + 1 < args.size()) info = args[++i];
    else {
      err << "usage: msomni sched-status --scheduler-info FILE [--json]\n";
      return exit_usage;
    }
  }
  const auto ep = read_scheduler_info(info);
  if (!ep) {
    err << "msomni sched-status: --scheduler-info FILE with \"ADDRESS TOKEN\" (written by msomni-sched) is required\n";
    return exit_usage;
  }
  scheduler_client client(*ep, "sched-status-" + std::to_string(::getpid()));
  if (!client.join(10s)) {
    err << "msomni sched-status: msomni-sched at " << ep->address << " never answered\n";
    return exit_failed;
  }
  auto& sys = client.system();
  caf::scoped_actor self{sys};
  int code = exit_failed;
  self->request(client.scheduler(), 10s, msg::scheduler_status_request{"cli"})
      .receive(
          [&](const msg::scheduler_status& s) {
            code = exit_ok;
            if (json) {
              out << "{\"policy\":\"" << s.policy << "\",\"gpus_total\":" << s.gpus_total << ",\"gpus_free\":" << s.gpus_free
                  << ",\"pending\":{\"critical\":" << s.pending_critical << ",\"regular\":" << s.pending_regular
                  << ",\"best_effort\":" << s.pending_best_effort << "},\"queue_capacity\":" << s.queue_capacity
                  << ",\"running\":" << s.running << ",\"borrowed\":" << s.borrowed << ",\"draining\":" << s.draining
                  << ",\"guests\":" << s.guests << ",\"decisions\":" << s.decisions
                  << ",\"reserve_deferrals\":" << s.reserve_deferrals << ",\"rejected\":" << s.rejected
                  << ",\"recovering\":" << (s.recovering ? "true" : "false") << ",\"held_back\":" << s.held_back << "}\n";
              return;
            }
            out << "policy " << s.policy << ", GPUs " << s.gpus_free << " free of " << s.gpus_total << "\n"
                << "queue   " << s.pending_critical + s.pending_regular + s.pending_best_effort << " of "
                << s.queue_capacity << " (critical " << s.pending_critical << ", regular " << s.pending_regular
                << ", best-effort " << s.pending_best_effort << ")\n"
                << "jobs    running " << s.running << " (borrowed " << s.borrowed << "), draining " << s.draining
                << ", guests " << s.guests << "\n"
                << "counts  decisions " << s.decisions << ", rejected " << s.rejected << ", reserve deferrals "
                << s.reserve_deferrals << "\n";
            if (s.recovering)
              out << "restart recovering from a restart: " << s.held_back << " submissions held back until it ends\n";
          },
          [&](const caf::error& e) {
            err << "msomni sched-status: no answer from msomni-sched (" << sys.render(e)
                << "); is the token in " << info << " current?\n";
          });
  return code;
}

}  // namespace msomni::cli
