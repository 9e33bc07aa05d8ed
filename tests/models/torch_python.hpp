// Whether a Python interpreter can import torch, for the tests of the torch backend: those that
// need it skip (MSOMNI_SKIP_TEST) with the reason this gives when it cannot.
#pragma once

#include "support/process_runner.hpp"

#include <string>

namespace msomni::testing {

// The interpreter the torch backend uses unless model.torch_python says otherwise.
inline constexpr const char* default_torch_python = "/usr/bin/python3";

// "" when `python` imports torch; else why not (its last output line).
inline std::string torch_missing_reason(const std::string& python = default_torch_python) {
  const auto r = run_command(python + " -c 'import torch'");
  if (r.exit_code == 0) return "";
  std::string last = r.output;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  if (const auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  return python + " cannot import torch (" + (last.empty() ? "exit code " + std::to_string(r.exit_code) : last) +
         "); install it (Debian: python3-torch, tools/bootstrap.sh)";
}

}  // namespace msomni::testing
