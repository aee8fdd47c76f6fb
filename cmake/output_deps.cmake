# sg2: the libraries of the output path — libdeflate (PNG deflate, engine/src/png_encode.cpp) — as
# imported targets:
#
#   sg2_dep_libdeflate
#
# Where they come from, first match wins:
#   1. ${SG2_DEPS_DIR}/libdeflate/{include,lib/libdeflate.a}: static, position-independent
#      copies of Debian 12's libraries, made by scripts/deps_for_gpu.sh for machines that cannot
#      install packages (linked into libsg2.so; the version script keeps their symbols hidden).
#   2. The system: libdeflate by pkg-config (Debian/Ubuntu libdeflate-dev ships no CMake config).
#      scripts/setup.sh installs it.
set(SG2_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH
    "folder of static copies of the output libraries (scripts/deps_for_gpu.sh); used when present")

set(_sg2_ldef ${SG2_DEPS_DIR}/libdeflate)
if(EXISTS ${_sg2_ldef}/lib/libdeflate.a AND EXISTS ${_sg2_ldef}/include/libdeflate.h)
  add_library(sg2_dep_libdeflate STATIC IMPORTED GLOBAL)
  set_target_properties(sg2_dep_libdeflate PROPERTIES IMPORTED_LOCATION ${_sg2_ldef}/lib/libdeflate.a
                        INTERFACE_INCLUDE_DIRECTORIES ${_sg2_ldef}/include)
  message(STATUS "sg2: libdeflate from ${_sg2_ldef} (static)")
else()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(SG2_LIBDEFLATE QUIET IMPORTED_TARGET GLOBAL libdeflate)
  endif()
  if(NOT SG2_LIBDEFLATE_FOUND)
    message(FATAL_ERROR "libdeflate not found: install libdeflate-dev and pkg-config (scripts/setup.sh does), "
                        "or put a static copy in ${SG2_DEPS_DIR} (scripts/deps_for_gpu.sh)")
  endif()
  add_library(sg2_dep_libdeflate INTERFACE IMPORTED GLOBAL)
  target_link_libraries(sg2_dep_libdeflate INTERFACE PkgConfig::SG2_LIBDEFLATE)
  message(STATUS "sg2: libdeflate ${SG2_LIBDEFLATE_VERSION} from the system")
endif()
