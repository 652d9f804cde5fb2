# Replaces lazyfs/CMakeLists.txt of the vendored LazyFS (cargo xtask powerloss). The original points at
# libpcache's FetchContent build tree for spdlog and fetches googletest; here spdlog comes from find_package,
# libpcache from PCACHE_BUILD_DIR (its build directory, given by xtask), the unit tests are left out, and the
# binary carries an rpath to libpcache so it runs without LD_LIBRARY_PATH.
cmake_minimum_required(VERSION 3.10)

project(lazyfs VERSION 0.0.1)

set(CMAKE_CXX_STANDARD 17)

find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(FUSE3 REQUIRED fuse3)

include_directories(include ../libs/libpcache/include)

add_executable(lazyfs)

target_sources(
    lazyfs
    PRIVATE
    ${PROJECT_SOURCE_DIR}/include/lazyfs/fusepp/Fuse.cpp
    src/lazyfs.cpp
    src/main.cpp
)

target_include_directories(lazyfs PRIVATE ${FUSE3_INCLUDE_DIRS})
target_link_libraries(lazyfs ${FUSE3_LIBRARIES} Threads::Threads ${PCACHE_BUILD_DIR}/libpcache.so spdlog::spdlog)
set_target_properties(lazyfs PROPERTIES BUILD_RPATH ${PCACHE_BUILD_DIR})
