# GPUMEM_SANITIZE=address,undefined or thread: applied to every target so the simulated driver,
# the library and the tests are instrumented together.
set(GPUMEM_SANITIZE "" CACHE STRING "Sanitizers to build with (address,undefined | thread)")
if(GPUMEM_SANITIZE)
  add_compile_options(-fsanitize=${GPUMEM_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${GPUMEM_SANITIZE})
  # g++ 12 warns that ThreadSanitizer does not model atomic_thread_fence (Asio's handlers and
  # peak/in_flight.cpp use fences; neither guards plain data with them, so no race goes unseen).
  if(GPUMEM_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
     AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    add_compile_options(-Wno-tsan)
  endif()
endif()
