// Never compiled: a core that breaks the purity rule through a header of its own, so the test
// orchestrator_core_purity_check_catches_caf shows that check_pure_core.cmake follows
// includes and refuses CAF.
#include "impure_core.hpp"

int impure_core_answer() { return 42; }
