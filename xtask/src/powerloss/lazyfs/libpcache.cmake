# Replaces libs/libpcache/CMakeLists.txt of the vendored LazyFS (cargo xtask powerloss). The original fetches
# toml11 and spdlog with FetchContent, which needs the network; Debian 12 ships exactly the versions it pins
# (toml11 3.7.1, spdlog 1.10.0), so they come from find_package instead. Everything else is as upstream.
cmake_minimum_required(VERSION 3.10)

project(pcache VERSION 0.0.1)

set(CMAKE_CXX_STANDARD 17)

find_package(toml11 REQUIRED)
find_package(spdlog REQUIRED)

add_library(pcache SHARED "")

target_compile_options(pcache PRIVATE -Wall -Wextra)

set_target_properties(pcache PROPERTIES VERSION ${PROJECT_VERSION_MAJOR} SOVERSION ${PROJECT_VERSION_MAJOR})

target_include_directories(pcache PUBLIC include)

target_sources(
    pcache
    PRIVATE
    src/engine/backends/custom/custom_cache.cpp
    src/engine/page/block_offsets.cpp
    src/engine/page/page.cpp
    src/cache.cpp
    src/item/metadata.cpp
    src/item/block_info.cpp
    src/item/data.cpp
    src/item/item.cpp
    src/config/config.cpp
    src/faults.cpp
)

target_link_libraries(pcache toml11::toml11 spdlog::spdlog)
