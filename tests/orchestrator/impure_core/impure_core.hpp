// Never compiled: the header through which impure_core.cpp reaches CAF.
#pragma once

#include <caf/actor.hpp>

int impure_core_answer();
