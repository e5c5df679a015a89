// The start of every line GPUMemTrace reports, as fastai.utils.mem prints it.
#pragma once

#include <string>

namespace gpumem::testing {

inline const std::string kPrefix = "\u25b3Used Peaked MB:";

}  // namespace gpumem::testing
