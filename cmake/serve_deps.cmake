# sg2 serve's libraries (apps/serve): Boost.Beast and Boost.Asio (header-only) for HTTP, and
# libjpeg-turbo's TurboJPEG API for JPEG answers, as two imported targets:
#
#   sg2_dep_beast   sg2_dep_turbojpeg
#
# Where they come from, first match wins:
#   1. ${SG2_DEPS_DIR}/boost/include (the Boost headers sg2 serve includes, and only those) and
#      ${SG2_DEPS_DIR}/turbojpeg/{include/turbojpeg.h,lib/libturbojpeg.a}: copies of Debian 12's
#      libboost-dev and libturbojpeg0-dev made by scripts/deps_for_gpu.sh for machines that cannot
#      install packages. libturbojpeg.a goes into the sg2 executable (a position-independent
#      executable may use its local-exec TLS; a shared library could not), never into libsg2.so.
#   2. The system: Boost by its CMake config (libboost-dev), TurboJPEG by pkg-config
#      (libturbojpeg0-dev). scripts/setup.sh installs both.
set(SG2_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH
    "folder of static copies of libdeflate, libarchive, TurboJPEG and Boost headers (scripts/deps_for_gpu.sh)")

if(EXISTS ${SG2_DEPS_DIR}/boost/include/boost/beast/http.hpp AND EXISTS ${SG2_DEPS_DIR}/boost/include/boost/asio.hpp)
  add_library(sg2_dep_beast INTERFACE IMPORTED GLOBAL)
  set_target_properties(sg2_dep_beast PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${SG2_DEPS_DIR}/boost/include
                        INTERFACE_LINK_LIBRARIES Threads::Threads)
  message(STATUS "sg2: Boost.Beast headers from ${SG2_DEPS_DIR}/boost")
else()
  find_package(Boost 1.70 QUIET CONFIG)
  if(NOT Boost_FOUND)
    message(FATAL_ERROR "Boost (Beast, Asio) not found: install libboost-dev (scripts/setup.sh does), copy its "
                        "headers into ${SG2_DEPS_DIR} (scripts/deps_for_gpu.sh), or configure with -DSG2_SERVE=OFF")
  endif()
  add_library(sg2_dep_beast INTERFACE IMPORTED GLOBAL)
  target_link_libraries(sg2_dep_beast INTERFACE Boost::headers Threads::Threads)
  message(STATUS "sg2: Boost ${Boost_VERSION} from the system")
endif()
# Boost.Asio without its deprecated interfaces (the code uses none).
set_property(TARGET sg2_dep_beast APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS BOOST_ASIO_NO_DEPRECATED)

set(_sg2_tj ${SG2_DEPS_DIR}/turbojpeg)
if(EXISTS ${_sg2_tj}/lib/libturbojpeg.a AND EXISTS ${_sg2_tj}/include/turbojpeg.h)
  add_library(sg2_dep_turbojpeg STATIC IMPORTED GLOBAL)
  set_target_properties(sg2_dep_turbojpeg PROPERTIES IMPORTED_LOCATION ${_sg2_tj}/lib/libturbojpeg.a
                        INTERFACE_INCLUDE_DIRECTORIES ${_sg2_tj}/include)
  message(STATUS "sg2: TurboJPEG from ${_sg2_tj} (static)")
else()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(SG2_TURBOJPEG QUIET IMPORTED_TARGET GLOBAL libturbojpeg)
  endif()
  if(NOT SG2_TURBOJPEG_FOUND)
    message(FATAL_ERROR "TurboJPEG not found: install libturbojpeg0-dev and pkg-config (scripts/setup.sh does), put "
                        "a static copy in ${SG2_DEPS_DIR} (scripts/deps_for_gpu.sh), or configure with -DSG2_SERVE=OFF")
  endif()
  add_library(sg2_dep_turbojpeg INTERFACE IMPORTED GLOBAL)
  target_link_libraries(sg2_dep_turbojpeg INTERFACE PkgConfig::SG2_TURBOJPEG)
  message(STATUS "sg2: TurboJPEG ${SG2_TURBOJPEG_VERSION} from the system")
endif()
