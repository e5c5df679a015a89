# Every target of the project compiles warning-free on g++ and clang. Warnings become errors only
# where asked (GPUMEM_WERROR, on in CI): a newer compiler's new warning must not break a user's build.
option(GPUMEM_WERROR "Treat compiler warnings as errors" OFF)
function(gpumem_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(GPUMEM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
