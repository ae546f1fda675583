# Writes OUT (generated/version.hpp) from host/version.hpp.in at build time, so that the git
# commit in every result's provenance is the one built (with "-dirty" for uncommitted changes).
# configure_file leaves OUT untouched when nothing changed, so nothing recompiles needlessly.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE ATTNLAB_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR NOT ATTNLAB_GIT_COMMIT)
  set(ATTNLAB_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- . WORKING_DIRECTORY ${SRC}
                  RESULT_VARIABLE dirty ERROR_QUIET)
  if(NOT dirty EQUAL 0)
    string(APPEND ATTNLAB_GIT_COMMIT "-dirty")
  endif()
endif()
set(PROJECT_VERSION ${VERSION})
set(ATTNLAB_WITH_CUDA_BOOL ${CUDA})
configure_file(${SRC}/host/version.hpp.in ${OUT} @ONLY)
