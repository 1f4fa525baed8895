# The install test (cmake -P): installs the build tree into a fresh prefix, checks the
# pkg-config file, configures and builds tests/install/consumer against the prefix — two models
# compiled by stitch_add_model and linked into one program — runs it, then checks that touching
# one model rebuilds its library and only its library.
#
#   cmake -DBUILD_DIR=<stitchc build> -DSOURCE_DIR=<repository> -DWORK_DIR=<scratch folder>
#         -P consumer_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "consumer_test.cmake needs -D${var}=...")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    string(REPLACE ";" " " line "${ARGN}")
    message(FATAL_ERROR "failed (${code}): ${line}\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(file bin/stitchc bin/stitch-run include/stitch/stitch.h include/stitch/stitch_prefixed.h
             lib/stitch/runtime/libstitch_runtime_host.a lib/cmake/stitch/stitchConfig.cmake)
  if(NOT EXISTS "${prefix}/${file}")
    message(FATAL_ERROR "the install prefix lacks ${file}")
  endif()
endforeach()

# The installed stitchc, away from its build tree, says its version.
run("${prefix}/bin/stitchc" --version)
if(NOT run_output MATCHES "^stitchc [0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "stitchc --version printed '${run_output}'")
endif()

# pkg-config finds the headers of this prefix, wherever it is.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB pc_file "${prefix}/lib*/pkgconfig/stitch.pc" "${prefix}/lib/*/pkgconfig/stitch.pc")
  get_filename_component(pc_dir "${pc_file}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  run("${PKG_CONFIG}" --cflags stitch)
  string(STRIP "${run_output}" cflags)
  file(REAL_PATH "${prefix}/include" include_dir)
  execute_process(COMMAND "${PKG_CONFIG}" --variable=includedir stitch OUTPUT_VARIABLE pc_include
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(REAL_PATH "${pc_include}" pc_include)
  if(NOT pc_include STREQUAL include_dir)
    message(FATAL_ERROR "pkg-config's includedir is ${pc_include}, not ${include_dir}")
  endif()
endif()

# The consumer: models copied so that the test can touch them.
set(models "${WORK_DIR}/models")
file(COPY "${SOURCE_DIR}/tests/snapshots/models/regional_softmax.onnx"
          "${SOURCE_DIR}/tests/snapshots/models/local_vec4.onnx" DESTINATION "${models}")
set(build "${WORK_DIR}/build")
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/install/consumer" -B "${build}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DMODELS_DIR=${models}")
run("${CMAKE_COMMAND}" --build "${build}")
run("${build}/two_models")
message(STATUS "${run_output}")
run("${build}/wrapper")
message(STATUS "${run_output}")

# The installed stitch-run finds libvec4.so's prefix from its name and reports the model's
# SHA-256 as CMake computes it.
run("${prefix}/bin/stitch-run" "${build}/libvec4.so" --info)
file(SHA256 "${models}/local_vec4.onnx" model_sha256)
if(NOT run_output MATCHES "C API prefix vec4\\)" OR
   NOT run_output MATCHES "model sha256: +${model_sha256}\n" OR
   NOT run_output MATCHES "model: +local_vec4\\.onnx\n")
  message(FATAL_ERROR "stitch-run --info on libvec4.so printed:\n${run_output}\n"
                      "(expected prefix vec4 and sha256 ${model_sha256})")
endif()

# Each library carries its SONAME and exports its prefixed API only.
find_program(READELF readelf)
if(READELF)
  run("${READELF}" --dynamic --dyn-syms --wide "${build}/libvec4.so")
  if(NOT run_output MATCHES "Library soname: \\[libvec4\\.so\\]")
    message(FATAL_ERROR "libvec4.so has no SONAME libvec4.so")
  endif()
  if(NOT run_output MATCHES " vec4_run\n" OR run_output MATCHES " stitch_[a-z_]+\n")
    message(FATAL_ERROR "libvec4.so should export vec4_run and no stitch_ name:\n${run_output}")
  endif()
endif()

# Touching one model rebuilds its library, and leaves the other alone.
file(TIMESTAMP "${build}/libvec4.so" vec4_before "%s")
file(TIMESTAMP "${build}/libsoftmax.so" softmax_before "%s")
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
file(TOUCH "${models}/local_vec4.onnx")
run("${CMAKE_COMMAND}" --build "${build}")
file(TIMESTAMP "${build}/libvec4.so" vec4_after "%s")
file(TIMESTAMP "${build}/libsoftmax.so" softmax_after "%s")
if(vec4_after STREQUAL vec4_before OR NOT softmax_after STREQUAL softmax_before)
  message(FATAL_ERROR "after touching local_vec4.onnx: libvec4.so ${vec4_before} -> "
                      "${vec4_after} (should change), libsoftmax.so ${softmax_before} -> "
                      "${softmax_after} (should not)")
endif()
run("${build}/two_models")
