# libattn_tune: the tuned kernels for other programs (include/attn_tune/attn_tune.h), shared and
# static, over the floors it uses (attn_library and below); plus what `cmake --install` puts in place (tool, library, headers,
# kernel sources, CMake package config, pkg-config file, Python package) and their tests.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTN_TUNE_LIB_DEPS fmt::fmt SQLite::SQLite3 ${XXHASH_LIB} ${CUDART_STATIC} ${NVRTC_LIB} Threads::Threads ${CMAKE_DL_LIBS} rt)
if(ATTN_TUNE_HAVE_HIP)
  list(APPEND ATTN_TUNE_LIB_DEPS ${AMDHIP_LIB})
endif()

# The floors the library uses (not the CLI's, nor CLI11).
set(ATTN_TUNE_LIB_FLOORS attn_core attn_report attn_backend attn_sweep attn_codegen attn_verify attn_run attn_db
    attn_library)
add_library(attn_tune SHARED ${CMAKE_SOURCE_DIR}/lib/c_api.cpp)
target_link_libraries(attn_tune PRIVATE attn_library)
target_compile_definitions(attn_tune PRIVATE ATTN_TUNE_BUILDING)
target_include_directories(attn_tune PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# Only the attn_tune_* functions are exported; the floors, fmt and cudart stay inside.
set_target_properties(attn_tune PROPERTIES CXX_VISIBILITY_PRESET hidden VERSION ${PROJECT_VERSION} SOVERSION 0)
target_link_options(attn_tune PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined
                    -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/attn_tune.map)
set_target_properties(attn_tune PROPERTIES LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/attn_tune.map)

# The static library holds the floors' objects too, so a consumer links one archive (and the
# toolkit's libraries, which its imported target names).
set(floor_objects)
foreach(floor ${ATTN_TUNE_LIB_FLOORS})
  list(APPEND floor_objects $<TARGET_OBJECTS:${floor}>)
endforeach()
add_library(attn_tune_static STATIC ${CMAKE_SOURCE_DIR}/lib/c_api.cpp ${floor_objects})
target_include_directories(attn_tune_static PRIVATE $<TARGET_PROPERTY:attn_library,INTERFACE_INCLUDE_DIRECTORIES>)
target_compile_definitions(attn_tune_static PRIVATE $<TARGET_PROPERTY:attn_library,INTERFACE_COMPILE_DEFINITIONS>)
target_include_directories(attn_tune_static PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                                    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(attn_tune_static PUBLIC ${ATTN_TUNE_LIB_DEPS})
add_dependencies(attn_tune_static ${ATTN_TUNE_LIB_FLOORS})
set_target_properties(attn_tune_static PROPERTIES OUTPUT_NAME attn_tune EXPORT_NAME attn_tune_static)
add_library(attn_tune::attn_tune ALIAS attn_tune)
add_library(attn_tune::attn_tune_static ALIAS attn_tune_static)

# The C++ example (examples/cpp), built here too so that CI keeps it compiling.
add_executable(attn_tune_example ${CMAKE_SOURCE_DIR}/examples/cpp/forward_example.cpp)
target_link_libraries(attn_tune_example PRIVATE attn_tune ${CUDART_STATIC} Threads::Threads ${CMAKE_DL_LIBS} rt)
target_include_directories(attn_tune_example SYSTEM PRIVATE ${CUDA_INCLUDE_DIR})

# --- install -------------------------------------------------------------------------------
find_package(Python3 COMPONENTS Interpreter)
set(ATTN_TUNE_PYTHON_DIR "${CMAKE_INSTALL_LIBDIR}/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages"
    CACHE STRING "Where `cmake --install` puts the Python package, relative to the prefix")
install(TARGETS attn-tune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS attn_tune attn_tune_static EXPORT attn_tune_targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/attn_tune DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/kernels/ DESTINATION ${CMAKE_INSTALL_DATADIR}/attn_tune/kernels
        FILES_MATCHING PATTERN "*.cuh")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/attn_tune DESTINATION ${ATTN_TUNE_PYTHON_DIR}
        PATTERN "__pycache__" EXCLUDE)
set(ATTN_TUNE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attn_tune)
install(EXPORT attn_tune_targets NAMESPACE attn_tune:: DESTINATION ${ATTN_TUNE_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/attn_tune-config.cmake.in
                              ${CMAKE_BINARY_DIR}/attn_tune-config.cmake INSTALL_DESTINATION ${ATTN_TUNE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/attn_tune-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/attn_tune-config.cmake ${CMAKE_BINARY_DIR}/attn_tune-config-version.cmake
        DESTINATION ${ATTN_TUNE_CMAKE_DIR})
configure_file(${CMAKE_SOURCE_DIR}/cmake/attn_tune.pc.in ${CMAKE_BINARY_DIR}/attn_tune.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/attn_tune.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# --- tests ---------------------------------------------------------------------------------
if(ATTN_TUNE_TESTS)
  # The C API through the shared library, as a consumer sees it (no device needed).
  add_executable(attn_library_tests ${CMAKE_SOURCE_DIR}/tests/library/test_c_api.cpp)
  target_link_libraries(attn_library_tests PRIVATE attn_tune GTest::gtest_main)
  target_compile_definitions(attn_library_tests PRIVATE ATTN_TUNE_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                           ATTN_TUNE_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(attn_library_tests PROPERTIES LABELS cpu FIXTURES_REQUIRED bundle_fixture DISCOVERY_TIMEOUT 60)
  # On a GPU: forward against a reference, layouts, GQA, cross-attention, causal, threads; CUDA
  # graph capture and replay; packed variable-length batches.
  add_executable(attn_library_gpu_tests ${CMAKE_SOURCE_DIR}/tests/library/test_forward_gpu.cpp
                                        ${CMAKE_SOURCE_DIR}/tests/library/test_forward_args_gpu.cpp
                                        ${CMAKE_SOURCE_DIR}/tests/library/test_graph_gpu.cpp
                                        ${CMAKE_SOURCE_DIR}/tests/library/test_varlen_gpu.cpp
                                        ${CMAKE_SOURCE_DIR}/tests/library/test_backward_gpu.cpp)
  target_link_libraries(attn_library_gpu_tests PRIVATE attn_tune GTest::gtest_main ${CUDART_STATIC}
                        Threads::Threads ${CMAKE_DL_LIBS} rt)
  target_include_directories(attn_library_gpu_tests SYSTEM PRIVATE ${CUDA_INCLUDE_DIR})
  target_include_directories(attn_library_gpu_tests PRIVATE ${CMAKE_SOURCE_DIR}/examples/cpp)
  target_compile_definitions(attn_library_gpu_tests PRIVATE ATTN_TUNE_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(attn_library_gpu_tests PROPERTIES LABELS gpu FIXTURES_REQUIRED bundle_fixture DISCOVERY_TIMEOUT 60)

  add_test(NAME library_example_forward COMMAND attn_tune_example 2,8,512,64 --causal)
  # GQA, fp16, [B,N,H,D], N_kv != N_q, causal; and N_q > N_kv causal (rows that see no key are 0).
  add_test(NAME library_example_forward_gqa_fp16_bshd
           COMMAND attn_tune_example --shape 2,8,384,128 --kv-heads 2 --kv-len 1024 --dtype fp16 --layout bshd --causal)
  add_test(NAME library_example_forward_more_queries_than_keys
           COMMAND attn_tune_example --shape 1,4,512,64 --kv-len 128 --causal --check-heads 4)
  # A packed variable-length batch: self-attention in FlashAttention's [total, H, D] with an empty
  # sequence; cross-attention [H, total, D] with GQA, a sequence of no keys, a window and softcap.
  add_test(NAME library_example_forward_packed
           COMMAND attn_tune_example --shape 4,8,512,64 --seqlens 512,100,0,300 --layout bshd --causal)
  add_test(NAME library_example_forward_packed_cross_window_softcap
           COMMAND attn_tune_example --shape 3,8,256,128 --kv-heads 2 --kv-len 512 --seqlens 256,1,77
                   --kv-seqlens 512,0,300 --window 64,-1 --softcap 30 --dtype fp16)
  set_tests_properties(library_example_forward library_example_forward_gqa_fp16_bshd
                       library_example_forward_more_queries_than_keys library_example_forward_packed
                       library_example_forward_packed_cross_window_softcap
                       PROPERTIES LABELS gpu SKIP_REGULAR_EXPRESSION "no CUDA device")
  # The example's own argument checks come before any device call: exit 2 naming the value.
  foreach(case
      "dtype|invalid --dtype 'fp8'|--dtype fp8"
      "layout|invalid --layout 'sbhd'|--layout sbhd"
      "shape|invalid shape '4,32,4096': expected B,H,N,D|--shape 4,32,4096"
      "shape_field|invalid shape field N of '4,32,x,128'|4,32,x,128"
      "kv_heads|invalid --kv-heads '0'|--kv-heads 0"
      "unknown|unknown option '--causl'|--causl"
      "seqlens_count|invalid --seqlens '1,2,3': 3 lengths for a batch of 4|--seqlens 1,2,3"
      "seqlens_over_n|length 600 is over 512 (N of --shape)|--shape 4,8,512,64 --seqlens 100,600,0,1"
      "window|invalid --window '3,4' with --causal|--causal --window 3,4")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 name)
    list(GET parts 1 pattern)
    list(GET parts 2 args)
    separate_arguments(args UNIX_COMMAND "${args}")
    add_test(NAME library_example_error_${name} COMMAND ${EXPECT} 2 "${pattern}" $<TARGET_FILE:attn_tune_example> ${args})
    set_tests_properties(library_example_error_${name} PROPERTIES LABELS cpu)
  endforeach()

  # The bundle command end to end: a bundle of the fixture's H200 configs (NVRTC, no GPU), read
  # back through the C API by attn_library_tests (LibraryBundle.*) when it exists.
  add_test(NAME cli_bundle_fixture
           COMMAND attn-tune bundle --table ${CMAKE_SOURCE_DIR}/tests/data/library_bundle_table.csv --arch sm_90a
                   --out ${CMAKE_BINARY_DIR}/fixture.attnb --force --cache-dir ${CMAKE_BINARY_DIR}/test-cache)
  set_tests_properties(cli_bundle_fixture PROPERTIES LABELS cpu FIXTURES_SETUP bundle_fixture)
  # Without --force an existing bundle is kept: the fixture's (written just before) is refused.
  add_test(NAME cli_error_bundle_exists
           COMMAND ${EXPECT} 2 "fixture.attnb' exists: pass --force to replace it" $<TARGET_FILE:attn-tune> bundle
                   --table ${CMAKE_SOURCE_DIR}/tests/data/library_bundle_table.csv --out ${CMAKE_BINARY_DIR}/fixture.attnb)
  set_tests_properties(cli_error_bundle_exists PROPERTIES LABELS cpu FIXTURES_REQUIRED bundle_fixture)
  # Help: `attn-tune --help` lists bundle; `attn-tune bundle --help` teaches its options.
  set(EXPECT_OUTPUT ${CMAKE_SOURCE_DIR}/tests/cli/expect_output.sh)
  add_test(NAME cli_help_lists_bundle
           COMMAND ${EXPECT_OUTPUT} "bundle|Write a deployment bundle" $<TARGET_FILE:attn-tune> --help)
  add_test(NAME cli_help_bundle
           COMMAND ${EXPECT_OUTPUT} "--table|--device-name|tuned.sqlite|--arch|--out|--force|--cache-dir|--no-cache|sm_90a|attn-tune export"
                   $<TARGET_FILE:attn-tune> bundle --help)
  add_test(NAME cli_error_bundle_not_first
           COMMAND ${EXPECT} 2 "'bundle' must come first" $<TARGET_FILE:attn-tune> -q bundle --table x --out y)
  set_tests_properties(cli_help_lists_bundle cli_help_bundle cli_error_bundle_not_first PROPERTIES LABELS cpu)
  add_test(NAME cli_error_bundle_missing_table
           COMMAND ${EXPECT} 2 "cannot read '/no/such/table.csv'" $<TARGET_FILE:attn-tune> bundle
                   --table /no/such/table.csv --out ${CMAKE_BINARY_DIR}/bad.attnb)
  add_test(NAME cli_error_bundle_no_entry_for_arch
           COMMAND ${EXPECT} 2 "holds no configs tuned on a device of sm_86" $<TARGET_FILE:attn-tune> bundle
                   --table ${CMAKE_SOURCE_DIR}/tests/data/library_export.csv --arch sm_86 --out ${CMAKE_BINARY_DIR}/bad.attnb)
  add_test(NAME cli_error_bundle_bad_arch
           COMMAND ${EXPECT} 2 "invalid --arch 'potato'" $<TARGET_FILE:attn-tune> bundle
                   --table ${CMAKE_SOURCE_DIR}/tests/data/library_export.csv --arch potato --out ${CMAKE_BINARY_DIR}/bad.attnb)
  add_test(NAME cli_error_bundle_device_name_with_a_table_file
           COMMAND ${EXPECT} 2 "is a table file, not the tuned-results database" $<TARGET_FILE:attn-tune> bundle
                   --table ${CMAKE_SOURCE_DIR}/tests/data/library_export.csv --device-name "NVIDIA H200"
                   --out ${CMAKE_BINARY_DIR}/bad.attnb)
  add_test(NAME cli_error_bundle_usage
           COMMAND ${EXPECT} 2 "--out is required" $<TARGET_FILE:attn-tune> bundle --table x)
  set_tests_properties(cli_error_bundle_missing_table cli_error_bundle_no_entry_for_arch cli_error_bundle_bad_arch
                       cli_error_bundle_device_name_with_a_table_file cli_error_bundle_usage PROPERTIES LABELS cpu)

  # The install tree: install into a temporary prefix, then a consumer project finds it with
  # find_package(attn_tune) and pkg-config, builds and runs (no device needed).
  add_test(NAME install_tree_consumer
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                   -DPREFIX=${CMAKE_BINARY_DIR}/install-test -DPYTHON_DIR=${ATTN_TUNE_PYTHON_DIR}
                   -DPYTHON=${Python3_EXECUTABLE}
                   -P ${CMAKE_SOURCE_DIR}/tests/install/check_install.cmake)
  set_tests_properties(install_tree_consumer PROPERTIES LABELS cpu TIMEOUT 600)

  # The Python package without a GPU: it imports, and says clearly what is missing.
  if(Python3_Interpreter_FOUND)
    add_test(NAME python_package_cpu
             COMMAND ${CMAKE_COMMAND} -E env ATTN_TUNE_TEST_LIBRARY=$<TARGET_FILE:attn_tune>
                     PYTHONPATH=${CMAKE_SOURCE_DIR}/python
                     ${Python3_EXECUTABLE} -m unittest discover -s ${CMAKE_SOURCE_DIR}/tests/python -p "test_*cpu.py" -v)
    set_tests_properties(python_package_cpu PROPERTIES LABELS cpu)
    add_test(NAME python_package_gpu
             COMMAND ${CMAKE_COMMAND} -E env ATTN_TUNE_LIBRARY=$<TARGET_FILE:attn_tune>
                     PYTHONPATH=${CMAKE_SOURCE_DIR}/python
                     ${Python3_EXECUTABLE} -m unittest discover -s ${CMAKE_SOURCE_DIR}/tests/python -p "test_*gpu.py" -v)
    set_tests_properties(python_package_gpu PROPERTIES LABELS gpu)
    add_test(NAME python_pip_install
             COMMAND ${CMAKE_SOURCE_DIR}/tests/python/pip_install.sh ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}
                     ${CMAKE_BINARY_DIR}/pip-install-test)
    set_tests_properties(python_pip_install PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
  endif()
endif()
