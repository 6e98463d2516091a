# rlockConfig.cmake - find_package(rlock) gives rlock::rlock, an INTERFACE
# target (rlock is header-only): its include directory is PREFIX/include, so
# #include <rlock/rlock.h> and <rlock/adapters/rlock_posix.h>. Installed by
# `make install` in PREFIX/share/cmake/rlock/; the prefix is found from this
# file's own place, so a DESTDIR-staged or moved tree works too.
# <rlock/adapters/rlock_hiredis.h> also needs hiredis (link -lhiredis);
# RLOCK_WATCHDOG needs Threads::Threads.
get_filename_component(_rlock_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET rlock::rlock)
    add_library(rlock::rlock INTERFACE IMPORTED)
    set_target_properties(rlock::rlock PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${_rlock_prefix}/include")
endif()
set(rlock_INCLUDE_DIR "${_rlock_prefix}/include")
unset(_rlock_prefix)
