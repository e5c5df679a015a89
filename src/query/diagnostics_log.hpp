// The library's record of why things fell back, declared where the tools can reach it too.
#pragma once

#include "gpumem/internal/diagnostics_log.hpp"
