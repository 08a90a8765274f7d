# Refuses a folder whose files include ("...") anything outside the folders it may
# include. Run by the build before the folder compiles, and by ctest:
#   cmake -DROOT=<source dir> -DFOLDER=runtime/storage
#         -DMAY_INCLUDE=runtime/storage,runtime/io -P cmake/check_includes.cmake
# Only quoted includes are ours; <...> includes are the system's and the libraries'.
cmake_minimum_required(VERSION 3.18)
foreach(variable ROOT FOLDER MAY_INCLUDE)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "check_includes.cmake: -D${variable}=... is missing")
  endif()
endforeach()
string(REPLACE "," ";" MAY_INCLUDE "${MAY_INCLUDE}")

file(GLOB files RELATIVE ${ROOT} ${ROOT}/${FOLDER}/*.hpp ${ROOT}/${FOLDER}/*.cpp)
set(refused "")
foreach(file IN LISTS files)
  file(STRINGS ${ROOT}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*" "\\1" included "${line}")
    get_filename_component(folder ${included} DIRECTORY)
    if(NOT folder IN_LIST MAY_INCLUDE)
      string(APPEND refused "\n  ${file} includes \"${included}\"")
    endif()
  endforeach()
endforeach()

if(refused)
  list(JOIN MAY_INCLUDE "/, " allowed)
  message(FATAL_ERROR "${FOLDER}/ may include only ${allowed}/ (see CMakeLists.txt):${refused}")
endif()
list(LENGTH files count)
message(STATUS "${FOLDER}/: ${count} files, each includes only what it may")
