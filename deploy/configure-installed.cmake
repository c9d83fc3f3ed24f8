# Run by `cmake --install` (see deploy/CMakeLists.txt): writes CUT_OUTPUT
# from CUT_TEMPLATE with the paths of this installation, whose prefix is
# known only now.  CUT_SBINDIR, CUT_LIBDIR and CUT_INCLUDEDIR are the
# GNUInstallDirs values, relative to the prefix or absolute.
#
# In the template, @CUT_VERSION@, @CUT_PREFIX@, @CUT_FULL_*DIR@ (absolute
# paths) and @CUT_PC_*DIR@ (the same, but under ${prefix} when they are in
# the prefix, as pkg-config files say it) are replaced, and so is
# /usr/local/sbin/cutd, the daemon's path in the systemd unit, which must
# stay a unit that works as it is in the source tree.

cmake_path(SET CUT_PREFIX NORMALIZE "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "(.)/$" "\\1" CUT_PREFIX "${CUT_PREFIX}")
foreach(dir SBINDIR LIBDIR INCLUDEDIR)
	cmake_path(ABSOLUTE_PATH CUT_${dir} BASE_DIRECTORY "${CUT_PREFIX}"
		NORMALIZE OUTPUT_VARIABLE CUT_FULL_${dir})
	if(IS_ABSOLUTE "${CUT_${dir}}")
		set(CUT_PC_${dir} "${CUT_FULL_${dir}}")
	else()
		set(CUT_PC_${dir} "\${prefix}/${CUT_${dir}}")
	endif()
endforeach()

file(READ "${CUT_TEMPLATE}" text)
if(CUT_TEMPLATE MATCHES "\\.service$")
	if(NOT text MATCHES "/usr/local/sbin/cutd")
		message(FATAL_ERROR "${CUT_TEMPLATE} no longer names "
			"/usr/local/sbin/cutd; update configure-installed.cmake")
	endif()
	string(REPLACE "/usr/local/sbin/cutd" "${CUT_FULL_SBINDIR}/cutd"
		text "${text}")
endif()
string(CONFIGURE "${text}" text @ONLY)
file(WRITE "${CUT_OUTPUT}" "${text}")
