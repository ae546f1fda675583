# translate.cmake: a .cu file as C++ for the SIMT emulation (kernels/simt/cuda_runtime.h).
#   cmake -DIN=kernels/x.cu -DOUT=build/.../x.cpp -P kernels/simt/translate.cmake
# The one change is the launch syntax, which C++ cannot parse:
#   name<T><<<grid, block[, shared[, stream]]>>>(args)
# becomes
#   name<T> % ::simt::launch_config("name", grid, block[, shared[, stream]]) % ::simt::kernel_args(args)
# A #line directive keeps every diagnostic and __FILE__ pointing at the .cu file.
file(READ "${IN}" text)
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*)(<[^<>;]*>)([ \t\n]*)<<<"
       "\\1\\2\\3 % ::simt::launch_config(\"\\1\", " text "${text}")
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*)([ \t\n]*)<<<"
       "\\1\\2 % ::simt::launch_config(\"\\1\", " text "${text}")
string(REGEX REPLACE ">>>[ \t\n]*\\(" ") % ::simt::kernel_args(" text "${text}")
string(FIND "${text}" "<<<" left)
string(FIND "${text}" ">>>" right)
if(NOT left EQUAL -1 OR NOT right EQUAL -1)
  message(FATAL_ERROR "translate.cmake: a launch in ${IN} that it cannot rewrite")
endif()
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
