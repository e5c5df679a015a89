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
# clang links its sanitizer runtime into executables only, so a shared library (the simulated
# driver, libgpumem, the injected library) would be left with the runtime's symbols undefined,
# and a process that is not itself instrumented could not load one. Its shared runtime, as g++
# uses, serves all of them; it lives in clang's own folder, which the binaries are told of.
if(GPUMEM_SANITIZE MATCHES "address" AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                  OUTPUT_VARIABLE gpumem_asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(gpumem_asan_runtime_dir "${gpumem_asan_runtime}" DIRECTORY)
  add_link_options(-shared-libasan "LINKER:-rpath,${gpumem_asan_runtime_dir}")
endif()
