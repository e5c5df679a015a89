# Every target of the project compiles warning-free on g++ and clang. Warnings become errors only
# where asked (GPUMEM_WERROR, on in CI): a newer compiler's new warning must not break a user's build.
option(GPUMEM_WERROR "Treat compiler warnings as errors" OFF)
function(gpumem_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  # g++ 12 at -O3 (Release) reports -Wrestrict inside libstdc++'s char_traits::copy for
  # `"literal" + std::string` (a known false positive of that release).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(GPUMEM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
