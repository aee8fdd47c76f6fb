# sg2: the libraries of the output path — libdeflate (PNG deflate, formats/png_encode.cpp) and
# libarchive (zip output, formats/dataset_zip.cpp) — as two imported targets:
#
#   sg2_dep_libdeflate   sg2_dep_libarchive
#
# Where they come from, first match wins:
#   1. ${SG2_DEPS_DIR}/libdeflate/{include,lib/libdeflate.a} and
#      ${SG2_DEPS_DIR}/libarchive/{include,lib/libarchive.a,lib/libnettle.a}: static, position-independent
#      copies of Debian 12's libraries, made by scripts/deps_for_gpu.sh for machines that cannot
#      install packages (linked into libsg2.so; the version script keeps their symbols hidden).
#   2. The system: libdeflate by pkg-config (Debian/Ubuntu libdeflate-dev ships no CMake config),
#      libarchive by CMake's FindLibArchive (libarchive-dev). scripts/setup.sh installs both.
set(SG2_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH
    "folder of static copies of libdeflate and libarchive (scripts/deps_for_gpu.sh); used when present")

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

set(_sg2_arch ${SG2_DEPS_DIR}/libarchive)
if(EXISTS ${_sg2_arch}/lib/libarchive.a AND EXISTS ${_sg2_arch}/lib/libnettle.a AND EXISTS ${_sg2_arch}/include/archive.h)
  find_package(ZLIB REQUIRED)  # libarchive.a needs zlib; the system's libz.so (every distribution has it)
  add_library(sg2_dep_nettle STATIC IMPORTED GLOBAL)
  set_target_properties(sg2_dep_nettle PROPERTIES IMPORTED_LOCATION ${_sg2_arch}/lib/libnettle.a)
  add_library(sg2_dep_libarchive STATIC IMPORTED GLOBAL)
  # The zip writer's object refers to a helper in the object of libarchive's format table, which names
  # every format writer and so the compressors sg2 does not link (bzip2, lzma, libxml2, ...). Debian
  # compiles libarchive with one section per function: --gc-sections drops the unused ones, and with
  # them those references.
  set_target_properties(sg2_dep_libarchive PROPERTIES IMPORTED_LOCATION ${_sg2_arch}/lib/libarchive.a
                        INTERFACE_INCLUDE_DIRECTORIES ${_sg2_arch}/include
                        INTERFACE_LINK_LIBRARIES "sg2_dep_nettle;ZLIB::ZLIB"
                        INTERFACE_LINK_OPTIONS "LINKER:--gc-sections")
  message(STATUS "sg2: libarchive from ${_sg2_arch} (static)")
else()
  find_package(LibArchive QUIET)
  if(NOT LibArchive_FOUND)
    message(FATAL_ERROR "libarchive not found: install libarchive-dev (scripts/setup.sh does), "
                        "or put a static copy in ${SG2_DEPS_DIR} (scripts/deps_for_gpu.sh)")
  endif()
  add_library(sg2_dep_libarchive INTERFACE IMPORTED GLOBAL)
  target_link_libraries(sg2_dep_libarchive INTERFACE LibArchive::LibArchive)
  message(STATUS "sg2: libarchive ${LibArchive_VERSION} from the system")
endif()
