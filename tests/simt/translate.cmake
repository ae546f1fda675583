# translate.cmake: a .cu file as C++ for the SIMT emulation (tests/simt/cuda_runtime.h).
#   cmake -DIN=kernels/x.cu -DOUT=build/.../x.cpp -P tests/simt/translate.cmake
# The changes, nothing else:
# - the launch syntax, which C++ cannot parse:
#     name<T><<<grid, block[, shared[, stream]]>>>(args)
#   becomes
#     name<T> % ::simt::launch_config("name", grid, block[, shared[, stream]]) % ::simt::kernel_args(args)
# - shared arrays, so that the race check sees their accesses (tests/simt/simt.hpp):
#     __shared__ T name[N];        becomes  __shared__ ::simt::SharedArray<T, N> name;
#     extern __shared__ T name[];  becomes  ::simt::DynamicShared<T> name;
#   (one-dimensional arrays of a named type; others stay plain static arrays, unchecked).
# A #line directive keeps every diagnostic and __FILE__ pointing at the .cu file.
file(READ "${IN}" text)
# (A line comment between the name and <<< moves into the argument list, so that it neither
# hides the rest nor lends the launch its last word as a name.)
set(gap "([ \t]*(//[^\n]*)?[ \t\n]*)")
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*)(<[^<>;]*>)${gap}<<<"
       "\\1\\2 % ::simt::launch_config(\"\\1\", \\3" text "${text}")
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*)${gap}<<<"
       "\\1 % ::simt::launch_config(\"\\1\", \\2" text "${text}")
string(REGEX REPLACE ">>>[ \t\n]*\\(" ") % ::simt::kernel_args(" text "${text}")
string(FIND "${text}" "<<<" left)
string(FIND "${text}" ">>>" right)
if(NOT left EQUAL -1 OR NOT right EQUAL -1)
  message(FATAL_ERROR "translate.cmake: a launch in ${IN} that it cannot rewrite")
endif()
set(name "[A-Za-z_][A-Za-z0-9_]*")
set(type "[A-Za-z_][A-Za-z0-9_:]*")
string(REGEX REPLACE "extern[ \t]+__shared__[ \t]+(${type})[ \t]+(${name})[ \t]*\\[[ \t]*\\][ \t]*;"
       "::simt::DynamicShared<\\1> \\2;" text "${text}")
string(REGEX REPLACE "__shared__[ \t]+(${type})[ \t]+(${name})[ \t]*\\[([^];[]+)\\][ \t]*;"
       "__shared__ ::simt::SharedArray<\\1, \\3> \\2;" text "${text}")
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
