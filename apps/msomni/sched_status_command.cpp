// `msomni sched-status --scheduler-info FILE [--json]`: asks msomni-sched (address and token
// from its info file) for its queue and jobs: pending by class against the queue's bound,
// running (of which borrowed), draining, guests, free GPUs, decisions, rejections; then
// each job (those holding GPUs first, then the queue in its order; at most 256) with its
// class, phase, GPUs, replicas, how long it has been there and why it waits (or does not
// grow, or as a critical host lends nothing), guests and hosts with their shares; and a
// "held" line saying why free GPUs stay unused. Every reason gives the numbers it compared
// (idle share against idle_threshold, confidence against min_confidence, GPUs needed against
// free ...); --json gives them by name too ("figures"). When msomni-sched serves /metrics, its
// address too (metrics_address in --json, empty when it serves none). Then the ended jobs it
// keeps, by how they ended, and the stopped ones in a section of their own: each with the
// checkpoint step the same job, submitted again, resumes from, and how long ago it stopped.
// Last, the newest decisions and holds as msomni-sched printed them (--json: all it sent, up
// to 32; the text: the newest 8).
#include "commands.hpp"

#include "scheduler_client.hpp"
#include "scheduler_status_json.hpp"
#include "scheduler_types.hpp"

#include "core/command_line.hpp"
#include "core/json_text.hpp"

#include "messages/catalog.hpp"

#include <caf/scoped_actor.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

namespace msomni::cli {

using namespace std::chrono_literals;

namespace {

// 42s, 17m05s, 3h02m
std::string age(double s) {
  const auto t = static_cast<long long>(std::max(0.0, s));
  char buf[32];
  if (t < 60) std::snprintf(buf, sizeof buf, "%llds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
  return buf;
}

// How many ended jobs msomni-sched keeps, of each end.
void print_ended_counts(const msg::scheduler_status& s, std::ostream& out) {
  std::map<std::string, size_t> by_end;
  for (const auto& j : s.ended) ++by_end[j.phase];
  out << "ended   " << s.ended.size() << " kept of " << s.ended_capacity << " (finished " << by_end["finished"]
      << ", failed " << by_end["failed"] << ", stopped " << by_end["stopped"] << ", lost " << by_end["lost"] << ")\n";
}

// How many of the newest decisions the text shows.
constexpr size_t recent_shown = 8;

// The newest decisions and holds, as msomni-sched's log lines say them (t= on its clock).
void print_recent(const msg::scheduler_status& s, std::ostream& out) {
  if (s.recent.empty()) return;
  out << "\nRECENT DECISIONS (newest last)\n";
  for (size_t i = s.recent.size() > recent_shown ? s.recent.size() - recent_shown : 0; i < s.recent.size(); ++i) {
    const auto& c = s.recent[i];
    out << age(s.now_s - c.at_s) << " ago  " << sched::to_string(c.kind) << " "
        << (c.job.empty() ? "cluster" : c.job) << ": " << c.reason << "\n";
  }
}

// The stopped jobs, newest first, each with the step it resumes from.
void print_stopped(const msg::scheduler_status& s, std::ostream& out) {
  const bool any = std::any_of(s.ended.begin(), s.ended.end(), [](const auto& j) { return j.phase == "stopped"; });
  if (!any) return;
  out << "\nSTOPPED (resumable: run the same msomni job again)\nJOB                  CLASS        RESUME FROM  AGO\n";
  for (const auto& j : s.ended) {
    if (j.phase != "stopped") continue;
    char line[256];
    std::snprintf(line, sizeof line, "%-20s %-12s step %-7llu  %s\n", j.job.c_str(), job_class_name(j.job_class),
                  static_cast<unsigned long long>(j.checkpoint_step), age(s.now_s - j.since_s).c_str());
    out << line;
  }
}

}  // namespace

int run_sched_status(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string info;
  bool json = false;
  CLI::App app{"msomni-sched's queue by class and bound, and its jobs by phase.", "msomni sched-status"};
  command_line::set_conventions(app);
  app.add_option("--scheduler-info", info, "the file msomni-sched wrote (\"ADDRESS TOKEN\")")
      ->type_name("FILE")
      ->required();
  app.add_flag("--json", json, "the status as one JSON object");
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
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
              out << json_text(scheduler_status_json(s)) << "\n";
              return;
            }
            out << "policy " << s.policy << ", GPUs " << s.gpus_free << " free of " << s.gpus_total << "\n"
                << "queue   " << s.pending_critical + s.pending_regular + s.pending_best_effort << " of "
                << s.queue_capacity << " (critical " << s.pending_critical << ", regular " << s.pending_regular
                << ", best-effort " << s.pending_best_effort << ")\n"
                << "jobs    running " << s.running << " (borrowed " << s.borrowed << "), draining " << s.draining
                << ", guests " << s.guests << "\n"
                << "counts  decisions " << s.decisions << ", rejected " << s.rejected << ", reserve deferrals "
                << s.reserve_deferrals << ", slowdown-budget holds " << s.budget_holds << "\n";
            if (!s.metrics_address.empty()) out << "metrics http://" << s.metrics_address << "/metrics\n";
            if (s.held != "none")
              out << "held    " << s.gpus_free << " GPUs free" << (s.held_job.empty() ? "" : " (" + s.held_job + ")")
                  << ": " << s.held_detail << "\n";
            if (s.recovering)
              out << "restart recovering from a restart: " << s.held_back << " submissions held back until it ends\n";
            print_ended_counts(s, out);
            if (s.jobs.empty()) {
              print_stopped(s, out);
              return print_recent(s, out);
            }
            out << "\nJOB                  CLASS        PHASE     GPUS  REPLICAS  FOR        NOTE\n";
            for (const auto& j : s.jobs) {
              std::string note = j.borrowed ? std::string("borrowed") : j.host.empty() ? std::string() : "guest of " + j.host;
              char share[64] = "";
              if (j.phase == "guest") std::snprintf(share, sizeof share, " (share %.2f)", j.share);
              else if (j.job_class == job_class::critical && j.phase == "running" && j.share > 0 && j.why.empty())
                std::snprintf(share, sizeof share, "lends %.2f", j.share);  // (its why says so, with the numbers)
              note += share;
              if (!j.hold_detail.empty()) note += (note.empty() ? "" : "; ") + j.hold_detail;
              else if (!j.why.empty()) note += (note.empty() ? "" : ": ") + j.why;
              char line[256];
              std::snprintf(line, sizeof line, "%-20s %-12s %-9s %4u  %8u  %-9s  ", j.job.c_str(), job_class_name(j.job_class),
                            j.phase.c_str(), j.gpus, j.replicas, age(s.now_s - j.since_s).c_str());
              out << line << note << "\n";
            }
            if (s.jobs_listed_of > s.jobs.size())
              out << "... " << s.jobs_listed_of - s.jobs.size() << " more jobs not listed\n";
            print_stopped(s, out);
            print_recent(s, out);
          },
          [&](const caf::error& e) {
            err << "msomni sched-status: no answer from msomni-sched (" << sys.render(e)
                << "); is the token in " << info << " current?\n";
          });
  return code;
}

}  // namespace msomni::cli
