# add_spyre_library: builds a Halide AOT library from one of our generator
# executables, for the Spyre device or as the host reference.
#
#   add_spyre_library(<name> GENERATOR <gen>
#                     [FROM <generator-exe>]      # default: gen_<gen>, else SpyreHalide::gen_<gen>
#                     [FUNCTION_NAME <fn>]        # default: <name>
#                     [TARGET spyre|host]         # default: spyre
#                     [PARAMS <key=value> ...]    # generator params
#                     [FEATURES <f> ...]          # extra Halide target features
#                     [USE_RUNTIME <lib>.runtime] # share another library's Halide runtime
#                     [AUTOSCHEDULER <Halide::Plugin> | <name> PLUGINS <plugin>]
#                     [PYTORCH])                  # also emit <fn>.pytorch.h (Halide's pytorch_wrapper)
#
# Works in this project (FROM gen_bmm, links spyre_runtime) and in projects
# that use the installed package (find_package(SpyreHalide); FROM
# SpyreHalide::gen_bmm, links SpyreHalide::spyre_runtime).
#
# TARGET spyre compiles with the target `x86-64-linux-spyre`: our generator
# driver (target/driver/generator_main.cpp) strips the `spyre` token and enables the
# Spyre schedule and lowering pass; CMake's helper still sees an x86-64-linux
# triple, so it does not switch to cross-compiling. TARGET host builds the CPU
# reference for the build machine (`host`, fast).
#
# AUTOSCHEDULER and PLUGINS are handed to add_halide_library unchanged, so
# they mean what they mean in Halide 14's HalideGeneratorHelpers.cmake:
# `AUTOSCHEDULER Halide::Mullapudi2016` (a MODULE target) adds
# `-p <its .so> -s Mullapudi2016` and the generator param auto_schedule=true
# to the generator command line; a bare name (`AUTOSCHEDULER Mullapudi2016`)
# needs the plugin in PLUGINS. (Halide 15 and later spell this
# `autoscheduler=<name>`; Halide 14 has no such generator param.) Halide 14
# builds `-p` from a list that CMake splits at its `;`, so two or more
# plugins in total give a broken generator expression; add_spyre_library
# rejects that case with an error instead. The generator's own schedule()
# still runs, so a generator meant for autoscheduling must skip its manual
# schedule when auto_schedule is true (the suite's generators do).
# The legalized stock autoschedulers need only our plugin, which loads the
# stock one from Halide's package: `AUTOSCHEDULER Legalized_Mullapudi2016
# PLUGINS SpyreHalide::Spyre` (or Legalized_Adams2019, Legalized_Li2018).
# `AUTOSCHEDULER SpyreHalide::Spyre` is our Spyre autoscheduler
# (docs/autoscheduling.md; SPYRE_AUTOSCHEDULE_BUDGET_S in the build's
# environment bounds its search, 50 s by default).
#
# The result is add_halide_library's static library target <name> (header
# <name>.h with function <fn>) that also links spyre_runtime. For Spyre builds
# the program files the lowering pass writes next to it, <fn>.spyre and
# <fn>.spyre.txt, are declared byproducts and recorded in the target property
# SPYRE_PROGRAM_FILES. PYTORCH adds Halide's `pytorch_wrapper` output (the
# header's path is the target property SPYRE_PYTORCH_WRAPPER), which
# add_spyre_torch_extension (cmake/SpyreHalideTorch.cmake) turns into torch ops.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/SpyreHalideTorch.cmake)

function(add_spyre_library NAME)
  set(one_value FROM GENERATOR FUNCTION_NAME TARGET USE_RUNTIME AUTOSCHEDULER)
  set(multi_value PARAMS FEATURES PLUGINS)
  cmake_parse_arguments(ARG "PYTORCH" "${one_value}" "${multi_value}" ${ARGN})
  if (ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "add_spyre_library(${NAME}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif ()
  if (NOT ARG_GENERATOR)
    message(FATAL_ERROR "add_spyre_library(${NAME}): GENERATOR <name> is required")
  endif ()
  if (NOT ARG_FROM)
    if (TARGET gen_${ARG_GENERATOR})
      set(ARG_FROM gen_${ARG_GENERATOR})
    elseif (TARGET SpyreHalide::gen_${ARG_GENERATOR})
      set(ARG_FROM SpyreHalide::gen_${ARG_GENERATOR})
    else ()
      message(FATAL_ERROR "add_spyre_library(${NAME}): no FROM given and neither gen_${ARG_GENERATOR} "
                          "nor SpyreHalide::gen_${ARG_GENERATOR} is a target")
    endif ()
  endif ()
  if (NOT TARGET ${ARG_FROM})
    message(FATAL_ERROR "add_spyre_library(${NAME}): FROM ${ARG_FROM} is not a target")
  endif ()
  if (NOT ARG_TARGET)
    set(ARG_TARGET spyre)
  endif ()
  if (NOT ARG_FUNCTION_NAME)
    set(ARG_FUNCTION_NAME ${NAME})
  endif ()

  if (ARG_TARGET STREQUAL "spyre")
    set(halide_target x86-64-linux-spyre)
  elseif (ARG_TARGET STREQUAL "host")
    set(halide_target host)
  else ()
    message(FATAL_ERROR "add_spyre_library(${NAME}): TARGET must be spyre or host, not '${ARG_TARGET}'")
  endif ()

  set(args FROM ${ARG_FROM} GENERATOR ${ARG_GENERATOR} FUNCTION_NAME ${ARG_FUNCTION_NAME}
           TARGETS ${halide_target})
  # The optional arguments pass through to add_halide_library unchanged.
  foreach (option IN ITEMS FEATURES PARAMS USE_RUNTIME AUTOSCHEDULER PLUGINS)
    if (ARG_${option})
      list(APPEND args ${option} ${ARG_${option}})
    endif ()
  endforeach ()
  set(all_plugins ${ARG_PLUGINS})
  if (ARG_AUTOSCHEDULER MATCHES "::")
    list(APPEND all_plugins ${ARG_AUTOSCHEDULER})
  endif ()
  list(LENGTH all_plugins plugin_count)
  if (plugin_count GREATER 1)
    message(FATAL_ERROR "add_spyre_library(${NAME}): Halide 14's add_halide_library cannot pass more "
                        "than one plugin (got ${all_plugins})")
  endif ()

  # In this project the runtime is spyre_runtime; through the installed
  # package it is SpyreHalide::spyre_runtime.
  if (TARGET SpyreHalide::spyre_runtime)
    set(spyre_runtime_target SpyreHalide::spyre_runtime)
  else ()
    set(spyre_runtime_target spyre_runtime)
  endif ()

  if (ARG_PYTORCH)
    list(APPEND args PYTORCH_WRAPPER pytorch_wrapper_header)
  endif ()

  add_halide_library(${NAME} ${args})
  target_link_libraries(${NAME} INTERFACE ${spyre_runtime_target})
  set_property(TARGET ${NAME} PROPERTY SPYRE_FUNCTION_NAME ${ARG_FUNCTION_NAME})
  if (ARG_PYTORCH)
    set_property(TARGET ${NAME} PROPERTY SPYRE_PYTORCH_WRAPPER ${pytorch_wrapper_header})
  endif ()

  if (ARG_TARGET STREQUAL "spyre")
    # The lowering pass writes these into the generator's -o directory (the
    # current binary dir for add_halide_library). Declared as byproducts of
    # the generator step so Ninja knows who makes them and `clean` removes them.
    set(program_files
        ${CMAKE_CURRENT_BINARY_DIR}/${ARG_FUNCTION_NAME}.spyre
        ${CMAKE_CURRENT_BINARY_DIR}/${ARG_FUNCTION_NAME}.spyre.txt)
    add_custom_command(TARGET ${NAME}.update POST_BUILD
                       COMMAND ${CMAKE_COMMAND} -E true
                       BYPRODUCTS ${program_files}
                       VERBATIM)
    set_property(TARGET ${NAME} PROPERTY SPYRE_PROGRAM_FILES ${program_files})
  endif ()
endfunction()
