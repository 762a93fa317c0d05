# config-example.cmake — writes OUT, the example configuration: what AIRLOCK's `config dump` prints
# for a file holding only "version: 1" (the embedded defaults), under a comment saying how to use it.
get_filename_component(dir ${OUT} DIRECTORY)
file(WRITE ${dir}/version1.yaml "version: 1\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 ${AIRLOCK} config dump --config ${dir}/version1.yaml
  OUTPUT_VARIABLE dump RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "airlock config dump failed (${rc})")
endif()
file(WRITE ${OUT}.tmp
  "# airlock's embedded configuration, as `airlock config dump` prints it. Copy it to\n"
  "# /etc/airlock/config.yaml, or write there only the keys you change: a file is merged over\n"
  "# these defaults (docs/config.md).\n${dump}")
file(RENAME ${OUT}.tmp ${OUT})
