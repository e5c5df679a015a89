# Every target of the project compiles warning-free; the library must stay clean on g++ and clang.
function(gpumem_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wno-missing-field-initializers)
endfunction()
