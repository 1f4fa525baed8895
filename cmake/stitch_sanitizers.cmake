# The sanitizer and fuzzing builds, each in its own build folder (scripts/test.sh,
# scripts/fuzz.sh):
#
#   -DSTITCH_SANITIZE=address,undefined   everything built with ASan and UBSan (any recovery
#   -DSTITCH_SANITIZE=thread              from UB is an error), or with TSan. Only the tests
#                                         that need no nvcc are registered (tests/CMakeLists.txt).
#                                         The host target's generated libraries get the same
#                                         -fsanitize flags (STITCH_HOST_SANITIZER_FLAGS, appended
#                                         to STITCH_HOST_CXX_FLAGS and so to the precompiled
#                                         header), so they run in the sanitized test processes.
#   -DSTITCH_FUZZ=ON                      clang only: the libraries up to the emitter with
#                                         libFuzzer coverage, ASan and UBSan, and the fuzz
#                                         target tests/fuzz (nothing else is configured).
#
# Both keep frame pointers and build with debug info: the ASan and UBSan build at -Og, the TSan
# and fuzzing builds at -O1 (see below).

set(STITCH_SANITIZE "" CACHE STRING
    "Build with these -fsanitize= checks: 'address,undefined' or 'thread' (empty: none)")
option(STITCH_FUZZ "Build only the libFuzzer target tests/fuzz (clang, ASan, UBSan)" OFF)
set(STITCH_HOST_SANITIZER_FLAGS "")

if(STITCH_FUZZ AND STITCH_SANITIZE)
  message(FATAL_ERROR "STITCH_FUZZ and STITCH_SANITIZE are separate builds: pick one")
endif()

if(STITCH_FUZZ OR STITCH_SANITIZE)
  # The ASan and UBSan build spends its time compiling, the compiler's sources and the
  # generated libraries its tests build: GCC compiles an instrumented translation unit about
  # twice as fast at -Og as at -O1 (src/emitter/kernel_attention.cpp: 6 s against 11), and the
  # tests' runs barely notice. The TSan build (the model runtime alone, built in a minute) keeps
  # -O1: at -Og TSan's shadow call stack comes out of the host target's fiber switches
  # unbalanced, and creating the next fiber faults inside TSan. The test command's builds take
  # line tables only (-g1); the fuzzing build (clang, where -Og is -O1) keeps -O1 and, for
  # triage, full -g.
  set(opt_level -Og)
  set(debug_info -g1)
  if(STITCH_FUZZ OR STITCH_SANITIZE STREQUAL "thread")
    set(opt_level -O1)
  endif()
  if(STITCH_FUZZ)
    set(debug_info -g)
  endif()
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "${opt_level} ${debug_info} -DNDEBUG" CACHE STRING "" FORCE)
  set(CMAKE_C_FLAGS_RELWITHDEBINFO "${opt_level} ${debug_info} -DNDEBUG" CACHE STRING "" FORCE)
  add_compile_options(-fno-omit-frame-pointer)
endif()

if(STITCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "STITCH_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  # clang 14 destroys a temporary twice around fmt 9's consteval format-string constructor
  # (frontend/onnx_attributes.cpp's "unsupported kind" error freed a stack address under ASan;
  # fixed in later clang): format strings are checked at compile time by the GCC builds.
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 15)
    add_compile_definitions(FMT_CONSTEVAL=)
  endif()
  # Coverage instrumentation for every library; the fuzz target links libFuzzer itself.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(STITCH_SANITIZE)
  if(NOT STITCH_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "STITCH_SANITIZE='${STITCH_SANITIZE}': use 'address,undefined' or 'thread'")
  endif()
  # Last on the host compile line, so the build's level wins over the host target's -O2.
  set(STITCH_HOST_SANITIZER_FLAGS -fsanitize=${STITCH_SANITIZE} -fno-omit-frame-pointer
                                  ${opt_level})
  if(STITCH_SANITIZE MATCHES "undefined")
    list(APPEND STITCH_HOST_SANITIZER_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(-fsanitize=${STITCH_SANITIZE})
  if(STITCH_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  add_link_options(-fsanitize=${STITCH_SANITIZE})
endif()
