# Runs stitchc on one error case and checks that it is rejected the way the case expects.
#
#   cmake -DSTITCHC=path/to/stitchc -DCASE_DIR=tests/errors/cases/NAME -P check_error.cmake
#
# CASE_DIR holds model.onnx (absent when the case is a missing model), expected.txt (one
# non-empty line) and optionally args.txt (extra stitchc arguments, one a line). The check
# passes only when stitchc exits with exactly 1 (a user error; 2 is a compiler bug), prints
# nothing on stdout, and prints exactly one line on stderr that starts with
# "stitchc: error: ", names the model path and contains the expected text.
cmake_minimum_required(VERSION 3.25)

foreach(var STITCHC CASE_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_error.cmake needs -D${var}=...")
  endif()
endforeach()

set(model "${CASE_DIR}/model.onnx")
set(expected_file "${CASE_DIR}/expected.txt")
set(args_file "${CASE_DIR}/args.txt")

# expected.txt: exactly one non-empty line, so that a case can never pass by accident.
if(NOT EXISTS "${expected_file}")
  message(FATAL_ERROR "${expected_file} is missing")
endif()
file(READ "${expected_file}" expected)
string(REGEX REPLACE "\r?\n$" "" expected "${expected}")
string(STRIP "${expected}" expected_stripped)
if(expected_stripped STREQUAL "")
  message(FATAL_ERROR "${expected_file} is empty: a case must say what stitchc must print")
endif()
if(expected MATCHES "[\r\n]")
  message(FATAL_ERROR "${expected_file} must hold one line")
endif()

set(args "")
if(EXISTS "${args_file}")
  file(READ "${args_file}" args_text)
  if(args_text MATCHES ";")
    message(FATAL_ERROR "${args_file}: arguments must not contain ';'")
  endif()
  string(REGEX REPLACE "\r?\n$" "" args_text "${args_text}")
  string(REPLACE "\n" ";" args "${args_text}")
endif()

execute_process(COMMAND "${STITCHC}" "${model}" ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 50)

set(problems "")
if(NOT rc STREQUAL "1")
  list(APPEND problems "exit status is '${rc}', expected 1 (a user error)")
endif()
if(NOT out STREQUAL "")
  list(APPEND problems "stdout is not empty")
endif()
string(REGEX REPLACE "\n$" "" err_line "${err}")
if(err_line MATCHES "\n")
  list(APPEND problems "stderr has more than one line")
endif()
string(FIND "${err_line}" "stitchc: error: " prefix_at)
if(NOT prefix_at EQUAL 0)
  list(APPEND problems "stderr does not start with 'stitchc: error: '")
endif()
string(FIND "${err_line}" "${model}" model_at)
if(model_at EQUAL -1)
  list(APPEND problems "stderr does not name the model '${model}'")
endif()
string(FIND "${err_line}" "${expected}" expected_at)
if(expected_at EQUAL -1)
  list(APPEND problems "stderr does not contain the expected text")
endif()

if(problems)
  string(REPLACE ";" "\n  " problems_text "${problems}")
  string(JOIN " " command_text "${STITCHC}" "${model}" ${args})
  message(FATAL_ERROR "case ${CASE_DIR}:\n  ${problems_text}\n"
                      "command:  ${command_text}\n"
                      "expected: ${expected}\n"
                      "stderr:   ${err_line}\n"
                      "stdout:   ${out}")
endif()
