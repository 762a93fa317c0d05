# install.cmake — what `cmake --install` puts beside the programs and the library: the pkg-config
# file, the man page, an example configuration and the systemd units of `airlock serve`.
#
# Paths inside the installed files are those of the prefix given at install time
# (`cmake --install build --prefix DIR`), not the one configured: each such file is written by the
# install step itself (airlock_install_rewritten), then installed like any other.

# airlock_install_rewritten(SRC DEST [@ONLY]): SRC with the install-time directories put in (for
# @ONLY, its @prefix@, @bindir@, @libdir@, @includedir@ and @version@; otherwise the /usr/bin of a
# systemd unit's commands), installed into DEST.
function(airlock_install_rewritten src dest mode)
  get_filename_component(name ${src} NAME)
  string(REGEX REPLACE "[.]in$" "" name ${name})
  set(out ${PROJECT_BINARY_DIR}/install/${name})
  set(dirs "")
  foreach(d BINDIR LIBDIR INCLUDEDIR)
    string(TOLOWER ${d} var)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
      string(APPEND dirs "set(${var} \"${CMAKE_INSTALL_${d}}\")\n")
    else()
      string(APPEND dirs "set(${var} \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_${d}}\")\n")
    endif()
  endforeach()
  if(mode STREQUAL "@ONLY")
    set(write "configure_file(\"${src}\" \"${out}\" @ONLY)")
  else()
    set(write "file(READ \"${src}\" text)
string(REPLACE \"=/usr/bin/\" \"=\${bindir}/\" text \"\${text}\")
file(WRITE \"${out}\" \"\${text}\")")
  endif()
  install(CODE "set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
set(version \"${PROJECT_VERSION}\")
${dirs}${write}")
  install(FILES ${out} DESTINATION ${dest})
endfunction()

airlock_install_rewritten(${PROJECT_SOURCE_DIR}/cmake/airlock.pc.in ${CMAKE_INSTALL_LIBDIR}/pkgconfig @ONLY)

install(FILES ${PROJECT_SOURCE_DIR}/docs/airlock.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The example configuration is the embedded one, as `airlock config dump` prints it (a file with
# only "version: 1" merged over the defaults): a copy for /etc/airlock/config.yaml that cannot
# drift from what the binary does.
set(AIRLOCK_CONFIG_EXAMPLE ${PROJECT_BINARY_DIR}/config.example.yaml)
add_custom_command(OUTPUT ${AIRLOCK_CONFIG_EXAMPLE}
  COMMAND ${CMAKE_COMMAND} -DAIRLOCK=$<TARGET_FILE:airlock> -DOUT=${AIRLOCK_CONFIG_EXAMPLE}
          -P ${PROJECT_SOURCE_DIR}/cmake/config-example.cmake
  DEPENDS airlock ${PROJECT_SOURCE_DIR}/cmake/config-example.cmake
  VERBATIM
  COMMENT "Writing the example configuration")
add_custom_target(airlock_config_example ALL DEPENDS ${AIRLOCK_CONFIG_EXAMPLE})
install(FILES ${AIRLOCK_CONFIG_EXAMPLE} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples RENAME config.yaml)

# The service: systemd finds units under PREFIX/lib/systemd/system for /usr and /usr/local alike.
airlock_install_rewritten(${PROJECT_SOURCE_DIR}/deploy/systemd/airlock.service lib/systemd/system "")
airlock_install_rewritten(${PROJECT_SOURCE_DIR}/deploy/systemd/airlock.socket lib/systemd/system "")
