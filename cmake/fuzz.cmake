# Fuzz targets (tests/fuzz/): each defines LLVMFuzzerTestOneInput once and is built
# twice. <name>_replay (every build) runs it over the committed corpus, so ctest replays
# the corpus in Release and under ASan + UBSan; <name>_fuzz (SPILLWAY_FUZZ, clang) is
# the libFuzzer binary that grows it.
add_library(spillway_fuzz_replay STATIC tests/fuzz/replay_main.cpp)
target_compile_options(spillway_fuzz_replay PRIVATE ${SPILLWAY_WARNINGS})

function(spillway_fuzz_target name)
  set(source ${CMAKE_SOURCE_DIR}/tests/fuzz/${name}_fuzz.cpp)
  add_executable(${name}_replay ${source})
  target_compile_options(${name}_replay PRIVATE ${SPILLWAY_WARNINGS})
  target_link_libraries(${name}_replay PRIVATE spillway_fuzz_replay ${ARGN})
  set(test "fuzz corpus: ${name} takes every input of tests/fuzz/corpus/${name}")
  add_test(NAME "${test}"
    COMMAND ${name}_replay ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set_tests_properties("${test}" PROPERTIES LABELS fuzz)
  if(SPILLWAY_FUZZ)
    add_executable(${name}_fuzz ${source})
    target_compile_options(${name}_fuzz PRIVATE ${SPILLWAY_WARNINGS})
    target_link_options(${name}_fuzz PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name}_fuzz PRIVATE ${ARGN})
  endif()
endfunction()

spillway_fuzz_target(bucket_file spillway_storage)
spillway_fuzz_target(tcp_frame spillway_net)
spillway_fuzz_target(config spillway_config)
