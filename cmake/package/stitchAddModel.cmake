# stitch_add_model: compile an ONNX model with stitchc at build time into a shared library, and
# make it an imported library target to link.
#
#   stitch_add_model(<name> MODEL <model.onnx>
#                    [TARGET cuda|host]          # default cuda
#                    [SYMBOL_PREFIX <prefix>]    # export the C API as <prefix>_run, ...
#                    [OUTPUT_NAME <base>]        # lib<base>.so; default <name>
#                    [DEPENDS <file>...]         # more inputs, e.g. the model's external data
#                    [ARGS <stitchc argument>...])
#
# The library is written to lib<base>.so in the current binary folder, with that SONAME, and is
# built again when the model, a DEPENDS file, stitchc or its runtime archives change. <name> is
# an IMPORTED SHARED library target carrying stitch::headers; a program linking it builds after
# it. Link two models into one program with different SYMBOL_PREFIXes (stitch_prefixed.h).
# Needs STITCH_STITCHC and STITCH_RUNTIME_DIR (stitchConfig.cmake sets them).
function(stitch_add_model name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MODEL;TARGET;SYMBOL_PREFIX;OUTPUT_NAME"
                        "DEPENDS;ARGS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "stitch_add_model(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_MODEL)
    message(FATAL_ERROR "stitch_add_model(${name}): MODEL <file.onnx> is required")
  endif()
  if(TARGET ${name})
    message(FATAL_ERROR "stitch_add_model(${name}): a target named ${name} exists already")
  endif()
  if(NOT arg_TARGET)
    set(arg_TARGET cuda)
  endif()
  if(NOT arg_TARGET MATCHES "^(cuda|host)$")
    message(FATAL_ERROR "stitch_add_model(${name}): TARGET ${arg_TARGET} is neither cuda nor host")
  endif()
  if(NOT arg_OUTPUT_NAME)
    set(arg_OUTPUT_NAME ${name})
  endif()
  cmake_path(ABSOLUTE_PATH arg_MODEL BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
             NORMALIZE OUTPUT_VARIABLE model)
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "stitch_add_model(${name}): the model ${model} does not exist")
  endif()
  set(depends "${model}" "${STITCH_STITCHC}")
  foreach(file IN LISTS arg_DEPENDS)
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND depends "${file}")
  endforeach()
  file(GLOB runtime_archives "${STITCH_RUNTIME_DIR}/libstitch_*_${arg_TARGET}.a")
  list(APPEND depends ${runtime_archives})

  set(soname "lib${arg_OUTPUT_NAME}.so")
  set(library "${CMAKE_CURRENT_BINARY_DIR}/${soname}")
  set(prefix_args)
  if(arg_SYMBOL_PREFIX)
    set(prefix_args --symbol-prefix ${arg_SYMBOL_PREFIX})
  endif()
  add_custom_command(
    OUTPUT "${library}"
    COMMAND "${STITCH_STITCHC}" "${model}" -o "${library}" --target ${arg_TARGET} ${prefix_args}
            --quiet ${arg_ARGS}
    DEPENDS ${depends}
    COMMENT "stitchc: compiling ${arg_MODEL} into ${soname} (${arg_TARGET})"
    VERBATIM)
  add_custom_target(${name}_stitchc DEPENDS "${library}")
  add_library(${name} SHARED IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES
    IMPORTED_LOCATION "${library}"
    IMPORTED_SONAME "${soname}"
    INTERFACE_LINK_LIBRARIES stitch::headers)
  add_dependencies(${name} ${name}_stitchc)
endfunction()
