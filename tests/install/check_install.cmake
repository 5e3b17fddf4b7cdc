# Installs the build into PREFIX, then configures, builds and runs tests/install/consumer against
# it with find_package(attn_tune), and checks the pkg-config file and the installed Python package.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
foreach(f bin/attn-tune include/attn_tune/attn_tune.h include/attn_tune/attn_tune.hpp
          share/attn_tune/kernels/fa2.cuh lib/pkgconfig/attn_tune.pc lib/cmake/attn_tune/attn_tune-config.cmake
          lib/libattn_tune.so lib/libattn_tune.a ${PYTHON_DIR}/attn_tune/__init__.py)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "the install tree lacks ${f}")
  endif()
endforeach()
set(consumer_build ${PREFIX}-consumer)
file(REMOVE_RECURSE ${consumer_build})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${consumer_build} -G Ninja
                        -DCMAKE_PREFIX_PATH=${PREFIX} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer project does not configure against ${PREFIX}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${consumer_build} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer project does not build against ${PREFIX}")
endif()
foreach(exe consumer_shared consumer_static)
  execute_process(COMMAND ${consumer_build}/${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${exe} failed (${rc}): ${out}")
  endif()
  message(STATUS "${exe}: ${out}")
endforeach()
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${PREFIX}/lib/pkgconfig ${PKG_CONFIG} --libs attn_tune
                  RESULT_VARIABLE rc OUTPUT_VARIABLE libs)
  if(rc OR NOT libs MATCHES "-lattn_tune")
    message(FATAL_ERROR "pkg-config --libs attn_tune: '${libs}'")
  endif()
endif()
# The installed Python package finds the installed library by itself (prefix/lib).
if(PYTHON)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ATTN_TUNE_LIBRARY PYTHONPATH=${PREFIX}/${PYTHON_DIR}
                          ${PYTHON} -c "import attn_tune; print(attn_tune.library_version())"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc OR NOT out MATCHES "0\\.1\\.0")
    message(FATAL_ERROR "the installed Python package does not load the installed library: ${out} ${err}")
  endif()
endif()
