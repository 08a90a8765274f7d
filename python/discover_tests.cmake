# Run at build time (python/CMakeLists.txt): lists the pytest tests and writes one
# ctest entry per test, as doctest_discover_tests does for the C++ suite, so that ctest
# counts what really ran. A test pytest skips shows as skipped, by its summary line.
#   PYTHON, SOURCE_DIR, TESTS_DIR, OUTPUT, ENVIRONMENT (a list of NAME=VALUE)
foreach(entry ${ENVIRONMENT})
  # Split at the first '=' only (a REGEX REPLACE with ^ would take every NAME= prefix).
  string(FIND "${entry}" "=" at)
  string(SUBSTRING "${entry}" 0 ${at} name)
  math(EXPR at "${at} + 1")
  string(SUBSTRING "${entry}" ${at} -1 value)
  set(ENV{${name}} "${value}")
endforeach()
execute_process(
  COMMAND ${PYTHON} -m pytest --collect-only -q -p no:cacheprovider ${TESTS_DIR}
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "pytest could not list the Python tests:\n${listing}\n${errors}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(count 0)
foreach(line ${lines})
  if(NOT line MATCHES "^python/tests/.*::")
    continue()
  endif()
  string(REGEX REPLACE "^python/tests/" "" name "${line}")
  string(APPEND script
    "add_test([==[python: ${name}]==] ${PYTHON} -m pytest -q -rs -p no:cacheprovider "
    "[==[${line}]==])\n"
    "set_tests_properties([==[python: ${name}]==] PROPERTIES LABELS python "
    "WORKING_DIRECTORY [==[${SOURCE_DIR}]==] ENVIRONMENT [==[${ENVIRONMENT}]==] "
    "SKIP_REGULAR_EXPRESSION [==[[0-9]+ skipped]==])\n")
  math(EXPR count "${count} + 1")
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "pytest listed no Python tests:\n${listing}")
endif()
file(WRITE ${OUTPUT} "${script}")
