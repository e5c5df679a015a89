// The stand-in libraries export exactly the C symbols of the libraries they replace; everything
// else is hidden (-fvisibility=hidden plus a version script per library).
#pragma once

#define GPUMEM_SIM_EXPORT extern "C" __attribute__((visibility("default")))
