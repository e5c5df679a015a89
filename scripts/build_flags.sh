# Sourced by the scripts: the CMake flags every tree they build shares.
# - Unity builds: the sources of a target compiled eight to a file, so the heavy header-only
#   libraries (CLI11, pybind11, Boost.Beast, GoogleTest) are compiled once per eight sources, not
#   once per source; the project's CMakeLists leave it off for users' own builds (a plain
#   configure compiles each file alone, and scripts/test.sh checks that too).
# - ccache, where it is installed: a rebuilt or second tree compiles only what changed.
GPUMEM_BUILD_FLAGS=(-DCMAKE_UNITY_BUILD=ON)
if command -v ccache >/dev/null; then
  GPUMEM_BUILD_FLAGS+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
