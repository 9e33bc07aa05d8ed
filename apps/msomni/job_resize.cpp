// msomni-run resized in place (job_spec::resize_in_place; see job_runner_state.hpp): the
// requests to its control endpoint that job_runner_core asks for, and their answers back to
// the core (which decides what a refusal, a timeout or a status means).
#include "job_runner_state.hpp"

namespace msomni::cli::runner_detail {

using namespace std::chrono_literals;

// How long msomni-run may take to answer a scale request and a status request.
constexpr auto resize_answer_timeout = 30s;
constexpr auto status_answer_timeout = 10s;

void ask_resize(runner_actor* self, const job_runner::ask_resize& r) {
  auto& s = self->state;
  const auto& spec = s.core.spec();
  std::string why;
  s.control.reset();
  if (!s.find_control) {
    why = "no run directory to find msomni-run's control endpoint in";
  } else {
    try {
      s.control = s.find_control(spec.run_dir);
      if (!s.control) why = "no control endpoint in " + spec.run_dir + "/control.json answers";
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (!s.control) return carry_out(self, s.core.on_resize_refused(why));
  const msg::control_request req{s.control->token, r.shrink ? "scale-down" : "scale-up", r.replicas, r.within_s,
                                 "msomni job " + spec.id};
  self->request(s.control->orchestrator, resize_answer_timeout, req)
      .then(
          [self](const msg::control_reply& reply) {
            auto& st = self->state;
            carry_out(self, reply.ok ? st.core.on_resize_accepted() : st.core.on_resize_refused(reply.text));
          },
          [self](caf::error& e) {
            carry_out(self, self->state.core.on_resize_refused("no answer from msomni-run: " + caf::to_string(e)));
          });
}

void ask_status(runner_actor* self) {
  auto& s = self->state;
  if (!s.control) return carry_out(self, s.core.on_resize_refused("msomni-run's control endpoint is not known"));
  self->request(s.control->orchestrator, status_answer_timeout, msg::control_request{s.control->token, "status", 0, 0, "msomni job"})
      .then(
          [self](const msg::control_reply& r) {
            auto& st = self->state;
            // In place: msomni-run only, whose checkpoints/latest names the step (0: none yet).
            carry_out(self, st.core.on_resize_status(r.ok, r.json, saved_step(st.core.spec().run_dir).value_or(0)));
          },
          [self](caf::error& e) {
            carry_out(self, self->state.core.on_resize_refused("msomni-run's status: " + caf::to_string(e)));
          });
}

}  // namespace msomni::cli::runner_detail
