# The installed SDK (`cmake --install BUILD --prefix P`):
#
#   P/include/kiln/**                 public headers (C API kiln.h, runtime C++ headers)
#   P/lib/libkiln_runtime.a           the runtime (no compiler, no LLVM)
#   P/lib/libkiln_compiler.a          the compiler with its LLVM code generator
#   P/bin/kiln                        the command
#   P/lib/kiln/kiln_hexagon_rt.o      the Hexagon runtime (KILN_HEXAGON_RUNTIME=... for kiln)
#   P/lib/cmake/kiln/                 find_package(kiln): kiln::runtime, kiln::compiler,
#                                     kiln::plugin (the plugin ABI's headers alone)
#                                     (kiln::codegen: another name for kiln::compiler)
#   P/lib/pkgconfig/kiln-runtime.pc   the runtime for pkg-config users
#
# Installing only copies what the build made. tests/install_consumer/ builds a
# program against an installed prefix (ctest: install_consumer).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

set_target_properties(kiln_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(kiln_plugin_headers PROPERTIES EXPORT_NAME plugin)
set_target_properties(kiln_compiler PROPERTIES EXPORT_NAME compiler)
set_target_properties(kiln_codegen PROPERTIES EXPORT_NAME codegen)
# Two export sets, so a program that embeds the runtime needs neither ONNX,
# protobuf nor LLVM installed to find kiln.
install(TARGETS kiln_runtime kiln_plugin_headers EXPORT kilnRuntimeTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kiln_compiler kiln_codegen EXPORT kilnCompilerTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The freestanding Hexagon runtime kiln links into Hexagon executables. The
# installed kiln looks for it where the build made it unless
# KILN_HEXAGON_RUNTIME names this copy.
install(FILES ${KILN_HEXAGON_RT} DESTINATION ${CMAKE_INSTALL_LIBDIR}/kiln)
install(EXPORT kilnRuntimeTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_INSTALL_DIR})
install(EXPORT kilnCompilerTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_INSTALL_DIR})

# Where the build found LLVM, so the compiler's consumers find the same one.
set(KILN_LLVM_DIR ${LLVM_DIR})
set(KILN_LLD_DIR ${LLD_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_CMAKE_INSTALL_DIR})
# Modules of another major.minor version are refused at load (module_file.h),
# so only a matching minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/kilnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/kilnConfig.cmake ${PROJECT_BINARY_DIR}/cmake/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_INSTALL_DIR})

set(KILN_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(KILN_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln-runtime.pc.in ${PROJECT_BINARY_DIR}/cmake/kiln-runtime.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/kiln-runtime.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
