# The floor plan (docs/design.md): each folder of src/ is its own static library that links only
# the folders below it. A folder's headers are reachable only through an include root of its own
# (build/floors/<folder>/<folder> -> src/<folder>), which a target gets from the floors it links:
# an #include of a folder above fails to build.
#
#   attn_floor(<folder> [DEPENDS <lower folders>] [LIBS <libraries>] [SOURCES <extra sources>]
#              [EXCLUDE <sources>])
function(attn_floor folder)
  cmake_parse_arguments(F "" "" "DEPENDS;LIBS;SOURCES;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${folder}/*.cpp)
  foreach(excluded ${F_EXCLUDE})
    list(REMOVE_ITEM sources ${excluded})
  endforeach()
  set(target attn_${folder})
  add_library(${target} STATIC ${sources} ${F_SOURCES})
  set(root ${CMAKE_BINARY_DIR}/floors/${folder})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${folder} ${root}/${folder} SYMBOLIC)
  target_include_directories(${target} PUBLIC ${root})
  foreach(dep ${F_DEPENDS})
    target_link_libraries(${target} PUBLIC attn_${dep})
  endforeach()
  target_link_libraries(${target} PUBLIC ${F_LIBS})
  # Position-independent: libattn_tune.so (cmake/library.cmake) is built over them.
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # -Wno-stringop-truncation: fast-cpp-csv-parser's header trips a GCC false positive once inlined.
  target_compile_options(${target} PRIVATE -Wall -Wextra $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-truncation>)
endfunction()
