# The torch backend (model.name = "torch"): its pure parts, config keys and checkpoint blobs,
# a module trained through the embedding API with its real Python worker, and msomni-run's
# refusals before a start. The cases that need torch report themselves skipped, with the reason, when
# /usr/bin/python3 cannot import it (tests/models/torch_python.hpp).
msomni_add_test(torch_model_tests
  SOURCES torch_batch_layout_test.cpp torch_config_test.cpp torch_state_dict_test.cpp torch_module_test.cpp
          torch_refusal_test.cpp
  LIBS msomni_torch_module msomni_model msomni_runtime)
target_compile_definitions(torch_model_tests PRIVATE MSOMNI_RUN_BINARY="$<TARGET_FILE:msomni-run>")
add_dependencies(torch_model_tests msomni-run msomni-rank)

# Torch models as real jobs: a resume equal to a straight run, a 2 -> 1 -> 2 scale, a killed rank,
# the export, a rank without torch (torch_job_test.cpp); and what a native job guarantees
# (torch_job_guarantees_test.cpp): a 4 -> 2 -> 4 scale within the native bound of a static run,
# a preemption under msomni-sched and msomni job resumed loss for loss, autoscaling from 1 to 2
# replicas with msomni inspect and a native job's metrics keys.
msomni_add_test(torch_job_tests
  SOURCES torch_job_test.cpp torch_job_guarantees_test.cpp
  LIBS msomni_runtime)
target_compile_definitions(torch_job_tests PRIVATE MSOMNI_RUN_BINARY="$<TARGET_FILE:msomni-run>"
  MSOMNI_CLI_BINARY="$<TARGET_FILE:msomni>" MSOMNI_SCHED_BINARY="$<TARGET_FILE:msomni-sched>")
add_dependencies(torch_job_tests msomni-run msomni-rank msomni msomni-agent msomni-sched)
