// gpumem: how much GPU memory code uses, and how high it peaks. The whole public API.
#pragma once

#include "gpumem/allocate.hpp"
#include "gpumem/cache.hpp"
#include "gpumem/device.hpp"
#include "gpumem/diagnostics.hpp"
#include "gpumem/memory.hpp"
#include "gpumem/peak.hpp"
#include "gpumem/trace.hpp"
#include "gpumem/version.hpp"
