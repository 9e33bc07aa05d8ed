// `msomni status|scale-down|scale-up|stop --run-dir DIR`: finds the job through the run
// directory's control.json (address + token, mode 0600), joins its control process over
// UCX as a short-lived node, sends one control_request and prints the reply.
#include "commands.hpp"
#include "control_file.hpp"
#include "core/secret_file.hpp"
#include "checkpoint_store.hpp"
#include "control_leadership.hpp"
#include "core/store_url.hpp"

#include "core/command_line.hpp"

#include "gateway/gateway.hpp"
#include "hub/transport_hub.hpp"
#include "messages/catalog.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace msomni::cli {

namespace {

using namespace std::chrono_literals;

// "120s", "2m", "1h", "90" (seconds). nullopt when unreadable.
std::optional<double> parse_duration(const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    const std::string unit = s.substr(used);
    if (v < 0) return std::nullopt;
    if (unit.empty() || unit == "s") return v;
    if (unit == "m") return v * 60;
    if (unit == "h") return v * 3600;
  } catch (...) {
  }
  return std::nullopt;
}

struct control_args {
  std::string run_dir;
  std::optional<std::string> token;  // overrides control.json (an empty one is sent as is)
  int64_t replicas = -1;
  double grace_s = 0;
  bool json = false;
};

control::control_view store_view(const control_file& file) {
  std::string why;
  const auto endpoints = parse_store_url(file.store, why);
  control::control_view v;
  if (endpoints.empty()) return v.error = "control.json's store \"" + file.store + "\" " + why, v;
  try {
    return control::read_control_view(endpoints, file.job);
  } catch (const std::exception& e) {
    return v.error = e.what(), v;
  }
}

// A checkpoint summary.json names as the resume point may be gone since it was written (the
// ranks of a deposed leader trained on under the next one, whose retention removed it): then
// the checkpoint root's `latest` now, and a note saying so. Nothing when the summary still holds.
std::optional<std::pair<nlohmann::json, std::string>> resume_now(const nlohmann::json& s) {
  if (!s.is_object() || !s.contains("resume") || !s["resume"].is_object()) return std::nullopt;
  const auto& resume = s["resume"];
  const auto named = resume.value("checkpoint", nlohmann::json()).is_string() ? resume["checkpoint"].get<std::string>() : "";
  const auto root = s.value("checkpoint_dir", std::string());
  std::error_code ec;
  if (named.empty() || root.empty() || std::filesystem::is_directory(std::filesystem::path(root) / named, ec))
    return std::nullopt;
  nlohmann::json now = {{"step", nullptr}, {"checkpoint", nullptr}};
  const auto latest = ckpt::latest_pointer_of(root);
  if (const auto step = latest ? ckpt::parse_checkpoint_dir_name(*latest) : std::nullopt) {
    now["step"] = *step;
    now["checkpoint"] = *latest;
  }
  const std::string note = "the summary names " + named + ", which no longer exists in " + root + "; the checkpoint root's latest is now " +
                           (now["checkpoint"].is_string() ? now["checkpoint"].get<std::string>() : std::string("none (a new run starts at step 0)"));
  return std::make_pair(now, note);
}

// A run that has ended answers from its run directory at once: `status` prints its summary
// (summary.json with --json) and exits 0; the other verbs are refused (exit 1).
int answer_ended(const std::string& verb, const control_args& a, const std::string& summary_json, std::ostream& out,
                 std::ostream& err) {
  auto s = nlohmann::json::parse(summary_json, nullptr, /*allow_exceptions=*/false);
  const auto resume = resume_now(s);
  const auto state = s.value("state", std::string("ended"));
  const auto steps = s.value("steps", nlohmann::json::object());
  const auto where = "step " + std::to_string(steps.value("done", uint64_t{0})) + "/" +
                     std::to_string(steps.value("total", uint64_t{0}));
  if (verb != "status") {
    err << "msomni " << verb << ": the job has ended (" << state << " at " << where << "; "
        << (std::filesystem::path(a.run_dir) / "summary.txt").string() << " says more)\n";
    return exit_failed;
  }
  if (a.json) {
    if (resume) {
      s["resume"] = resume->first;
      s["resume_note"] = resume->second;
      out << s.dump() << "\n";
    } else {
      out << summary_json << (summary_json.ends_with("\n") ? "" : "\n");
    }
    return exit_ok;
  }
  out << "job " << state << " (it has ended; from " << (std::filesystem::path(a.run_dir) / "summary.json").string()
      << "): " << where << "\n";
  std::ifstream text(std::filesystem::path(a.run_dir) / "summary.txt");
  for (std::string line; std::getline(text, line);)
    if (!(resume && line.rfind("resume from", 0) == 0)) out << "  " << line << "\n";
  if (resume) out << "  resume from   " << resume->second << "\n";
  return exit_ok;
}

// A job whose control process is gone and left no summary: with a store, a standby may be
// taking over, so what the store knows; without, it has ended. Exit 1 either way.
int answer_gone(const std::string& verb, const control_args& a, const control_file& file, std::ostream& out,
                std::ostream& err) {
  if (!file.store.empty()) {  // a standby may be taking over: say what the store knows
    err << "msomni " << verb << ": the job's control process (pid " << file.pid << ") is gone and no leader serves it now\n";
    const auto view = store_view(file);
    (a.json ? out : err) << (a.json ? view.to_json().dump() + "\n" : view.to_text());
    return exit_failed;
  }
  err << "msomni " << verb << ": the job has ended (its control process, pid " << file.pid
      << ", is gone) and left no summary.json in " << a.run_dir << "\n";
  return exit_failed;
}

// Waits up to 10 s for the control node to let this one in; false after saying why it did not.
bool control_answers(transport::transport_hub& hub, const std::atomic<bool>& refused, const std::string& verb,
                     const std::string& address, std::ostream& err) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!hub.node().wait_up("control", 100ms) && !refused && std::chrono::steady_clock::now() < deadline) {
  }
  if (refused) {
    err << "msomni " << verb << ": refused: missing or wrong token (read it from the run directory's control.json)\n";
    return false;
  }
  if (!hub.node().is_up("control")) {
    err << "msomni " << verb << ": the job's control process at " << address << " does not answer (has it ended?)\n";
    return false;
  }
  return true;
}

// Sends `req` to the orchestrator and prints its reply (JSON with --json where it has one).
// Returns the exit code.
int request_and_print(caf::actor_system& sys, const msg::orchestrator_actor& orchestrator,
                      const msg::control_request& req, const std::string& verb, const control_args& a,
                      const control_file& file, std::ostream& out, std::ostream& err) {
  int code = exit_failed;
  caf::scoped_actor self{sys};
  self->request(orchestrator, 30s, req)
      .receive(
          [&](const msg::control_reply& r) {
            // status of a job with a store: the control plane as the store has it, too.
            const bool plane = verb == "status" && r.ok && !file.store.empty();
            if (a.json && !r.json.empty()) {
              auto j = nlohmann::ordered_json::parse(r.json, nullptr, false);
              if (plane && j.is_object()) j["control_plane"] = store_view(file).to_json();
              out << (j.is_discarded() ? r.json : j.dump()) << "\n";
            } else {
              (r.ok ? out : err) << (r.ok ? "" : "msomni " + verb + ": ") << r.text << (r.text.ends_with("\n") ? "" : "\n");
              if (plane) out << store_view(file).to_text();
            }
            code = r.ok ? exit_ok : exit_failed;
          },
          [&](caf::error& e) {
            if (e == caf::sec::request_receiver_down)
              err << "msomni " << verb << ": the job's control process at " << file.address
                  << " went away before it answered (has it ended?)\n";
            else
              err << "msomni " << verb << ": no reply: " << caf::to_string(e) << "\n";
          });
  return code;
}

// Joins the job's control process over UCX as a short-lived node and sends it one
// control_request. Returns the exit code.
int ask_job(const std::string& verb, const control_args& a, const control_file& file, std::ostream& out,
            std::ostream& err) {
  const std::string& address = file.address;
  const std::string token = a.token.value_or(file.token);
  caf::actor_system_config cfg;
  caf::actor_system sys{configure_process(cfg, 1, idle_threads::wake)};
  try {
    transport::ucx_node_options opt;
    opt.busy_poll = transport::control_plane_busy_poll;
    opt.name = "cli-" + std::to_string(::getpid());
    opt.listen_host = transport::local_address_towards(address.substr(0, address.rfind(':')));  // and loopback
    std::atomic<bool> refused{false};  // outlives the hub that sets it
    transport::transport_hub hub(opt);
    hub.add_refusal_listener([&](const std::string&, const std::string&) { refused = true; });
    transport::gateway gw(sys, hub);
    hub.node().connect(address, token);  // the control node lets in only peers that prove the token
    if (!control_answers(hub, refused, verb, address, err)) return exit_failed;
    auto orchestrator = gw.remote_actor<msg::orchestrator_actor>("control", "orchestrator");
    const char* user = std::getenv("USER");
    msg::control_request req{token, verb, a.replicas, a.grace_s, std::string("cli:") + (user ? user : "?")};
    return request_and_print(sys, orchestrator, req, verb, a, file, out, err);
  } catch (const std::exception& e) {
    err << "msomni " << verb << ": " << e.what() << "\n";
    return exit_failed;
  }
}

int send(const std::string& verb, const control_args& a, std::ostream& out, std::ostream& err) {
  const auto path = std::filesystem::path(a.run_dir) / "control.json";
  const auto file = read_control_file(path);
  if (!file) {
    err << "msomni " << verb << ": cannot read an address and a token from " << path.string()
        << " (is --run-dir the job's run directory?)\n";
    return exit_usage;
  }
  try {
    // The job's token is a secret: a control.json others can read is refused, as the agents do.
    refuse_readable_by_others(path.string());
  } catch (const std::exception& e) {
    err << "msomni " << verb << ": " << e.what() << "; nothing was sent\n";
    return exit_usage;
  }
  if (const auto summary = ended_run_summary(a.run_dir, *file)) return answer_ended(verb, a, *summary, out, err);
  if (control_process_gone(*file)) return answer_gone(verb, a, *file, out, err);
  return ask_job(verb, a, *file, out, err);
}

// A duration flag: "120s", "2m", "1h" or "90" (seconds), within `limit`; rewritten to seconds.
CLI::Validator duration_within(config::limits::range<double> limit) {
  const auto in = command_line::within(limit);
  return CLI::Validator(
      [in](std::string& v) -> std::string {
        const auto d = parse_duration(v);
        if (!d) return "\"" + v + "\" is not a duration (e.g. 120s, 2m)";
        std::ostringstream seconds;
        seconds.precision(17);
        seconds << *d;
        std::string text = seconds.str();
        if (auto why = in(text); !why.empty()) return v + " is " + text + " s, not in " + in.get_description() + " s";
        v = text;
        return {};
      },
      "");
}

int run_verb(const std::string& verb, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  namespace limits = config::limits;
  control_args a;
  const bool needs_replicas = verb == "scale-down" || verb == "scale-up";
  CLI::App app{"Sends one control request to a running job, found through its run directory's control.json.",
               "msomni " + verb};
  command_line::set_conventions(app);
  app.add_option("--run-dir", a.run_dir, "the job's run directory (msomni-run's --run-dir)")
      ->type_name("DIR")
      ->required();
  app.add_option_function<std::string>(
         "--token", [&a](const std::string& t) { a.token = t; },
         "the job's token instead of the one in control.json (an empty one is refused: it proves nothing)")
      ->type_name("T");
  app.add_flag("--json", a.json,
               "print the job's reply as JSON where it gives one (status; the others when their reply "
               "carries JSON), else its text");
  if (needs_replicas)
    app.add_option("--replicas", a.replicas, "the job's new number of replicas (as elasticity.replicas)")
        ->type_name("N")
        ->required()
        ->transform(command_line::within(limits::elasticity::replicas));
  if (verb == "scale-down")
    app.add_option("--grace-period", a.grace_s,
                   "how long the leaving replicas get to reach the barrier: 120s, 2m, 1h or seconds (as "
                   "elasticity.grace_period_s; default: the job's)")
        ->type_name("DURATION")
        ->transform(duration_within(limits::elasticity::grace_period_s));
  if (const auto rc = command_line::parse(app, args, out, err)) return *rc;
  if (a.token && a.token->empty())
    return command_line::refuse(app, "--token is empty: an empty token proves nothing to the job (leave --token out to "
                                     "use the one in the run directory's control.json)", err);
  return send(verb, a, out, err);
}

}  // namespace

int run_status(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_verb("status", args, out, err);
}
int run_scale_down(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_verb("scale-down", args, out, err);
}
int run_scale_up(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_verb("scale-up", args, out, err);
}
int run_stop(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_verb("stop", args, out, err);
}

}  // namespace msomni::cli
