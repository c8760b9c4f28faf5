# SPDX-License-Identifier: GPL-2.0-or-later
# Include paths that follow the link graph (docs/architecture.md).
#
# guestfrag_include_root(<target> [<path>...])
#   Gives <target> an include root of its own in the build tree, holding symbolic links to
#   <path>s of the source tree (directories or single headers, relative to the project;
#   default: the calling CMakeLists.txt's directory), and publishes that root to whatever
#   links <target>. Every library adds only its own root, so a source file sees
#   "core/plan/..." only if its target links guestfrag_plan: an include of a layer the
#   target does not link fails to compile ("No such file or directory"). That is why no
#   target may put ${PROJECT_SOURCE_DIR} itself on its include path.
function(guestfrag_include_root target)
  set(paths ${ARGN})
  if(NOT paths)
    file(RELATIVE_PATH paths ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  set(root ${PROJECT_BINARY_DIR}/include/${target})
  foreach(path IN LISTS paths)
    get_filename_component(parent ${root}/${path} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${path} ${root}/${path} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
endfunction()
