// Test processes: the runtime's child_process under the name the tests use.
#pragma once

#include "core/child_process.hpp"

namespace msomni::testing {
using node_process = msomni::child_process;
}  // namespace msomni::testing
