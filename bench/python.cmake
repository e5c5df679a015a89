# The Python benchmark: spike capture by gpumem's native sampler vs the seed's Python thread,
# with the interpreter idle and busy. `cmake --build <build> --target bench_python` runs it.
if(TARGET gpumem_native)
  add_custom_target(bench_python
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python
            ${GPUMEM_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/python_spike_capture.py
            --sim-dir ${GPUMEM_SIM_DIR}
    USES_TERMINAL
    VERBATIM)
  add_dependencies(bench_python gpumem_native gpumem_sim)
endif()

# The pytest plugin's cost per test (--gpumem on trivial tests, without attribution):
# `cmake --build <build> --target bench_pytest_plugin`.
if(TARGET gpumem_native)
  add_custom_target(bench_pytest_plugin
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python
            ${GPUMEM_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/pytest_plugin_cost.py
            --sim-dir ${GPUMEM_SIM_DIR}
    USES_TERMINAL
    VERBATIM)
  add_dependencies(bench_pytest_plugin gpumem_native gpumem_sim)
endif()

# gpumem.StepPeaks' cost per training step against a bare step and one NVML read:
# `cmake --build <build> --target bench_python_steps`.
if(TARGET gpumem_native)
  add_custom_target(bench_python_steps
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python
            ${GPUMEM_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/python_step_cost.py
            --sim-dir ${GPUMEM_SIM_DIR}
    USES_TERMINAL
    VERBATIM)
  add_dependencies(bench_python_steps gpumem_native gpumem_sim)
endif()
