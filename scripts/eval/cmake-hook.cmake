# Until bench/CMakeLists.txt and tests/CMakeLists.txt list the "eval" folders,
# configure with -DCMAKE_PROJECT_kvcg_INCLUDE=<this file>: at the end of the
# top-level CMakeLists (a deferred call, so every library target exists by
# then) it includes the two eval CMakeLists — deferred code may not call
# add_subdirectory, and both files are written to work either way. It does
# nothing for a folder the regular hooks have already added.
macro(kvcg_eval_hook)
  if(KVCG_BUILD_BENCH AND NOT TARGET kvcg-ycsb)
    include(${CMAKE_SOURCE_DIR}/bench/eval/CMakeLists.txt)
  endif()
  get_property(_kvcg_eval_tests GLOBAL PROPERTY KVCG_EVAL_TESTS_ADDED)
  if(KVCG_BUILD_TESTS AND NOT _kvcg_eval_tests)
    include(${CMAKE_SOURCE_DIR}/tests/eval/CMakeLists.txt)
  endif()
endmacro()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL kvcg_eval_hook)
