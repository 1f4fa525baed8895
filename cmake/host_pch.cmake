# Builds the host target's precompiled runtime header: copies the runtime headers FILES (paths
# under BASE, "|"-separated) into OUT_DIR and compiles OUT_DIR/stitch_generated.h with CXX and
# FLAGS ("|"-separated), the very flags stitchc's host compile uses, into
# OUT_DIR/stitch_generated.h.gch. OUT_DIR/compiler.txt names the compiler (its real path), so
# that stitchc only uses the header with that compiler. Run as:
#   cmake -DOUT_DIR=... -DBASE=... -DFILES=... -DCXX=... -DFLAGS=... -P host_pch.cmake
string(REPLACE "|" ";" FILES "${FILES}")
string(REPLACE "|" ";" FLAGS "${FLAGS}")
file(REMOVE_RECURSE "${OUT_DIR}")
foreach(path IN LISTS FILES)
  file(RELATIVE_PATH rel "${BASE}" "${path}")
  get_filename_component(sub "${rel}" DIRECTORY)
  file(COPY "${path}" DESTINATION "${OUT_DIR}/${sub}")
endforeach()
execute_process(
  COMMAND "${CXX}" ${FLAGS} -I. -x c++-header stitch_generated.h -o stitch_generated.h.gch
  WORKING_DIRECTORY "${OUT_DIR}"
  RESULT_VARIABLE result
  ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "precompiling the host runtime header failed:\n${errors}")
endif()
file(REAL_PATH "${CXX}" compiler)
file(WRITE "${OUT_DIR}/compiler.txt" "${compiler}\n")
