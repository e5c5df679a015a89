# GPUMEM_SANITIZE=address,undefined or thread: applied to every target so the simulated driver,
# the library and the tests are instrumented together.
set(GPUMEM_SANITIZE "" CACHE STRING "Sanitizers to build with (address,undefined | thread)")
if(GPUMEM_SANITIZE)
  add_compile_options(-fsanitize=${GPUMEM_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${GPUMEM_SANITIZE})
endif()
