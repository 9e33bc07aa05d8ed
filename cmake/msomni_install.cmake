# What `cmake --install` puts under the prefix: the programs (bin/), the model embedding API
# headers with their include closure (include/msomni/), the two ways to find them (the CMake
# package msomni: msomni::model; the pkg-config file msomni-model) and an example model
# plugin's sources (share/msomni/examples/).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# msomni-run starts msomni-rank and msomni-gen-dataset found next to itself, so they share
# one folder. The link path stays in the installed RPATH: NCCL and CUDA live outside the
# loader's default search path here.
set(msomni_installed_programs msomni-run msomni-rank msomni msomni-agent msomni-sched msomni-gen-dataset)
foreach(program ${msomni_installed_programs})
  set_target_properties(${program} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()
install(TARGETS ${msomni_installed_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# A plugin compiles against these alone: the embedding API, its helpers for flat-buffer
# models (parameter layout, AdamW, checkpoint state, the host_model base) and what they
# include from runtime/ (job_config.hpp for model_context's [model] section, modality.hpp, job_class.hpp).
# The model registry (model_registry.hpp) is the host's side and lives in msomni's
# libraries, so it is not installed.
set(msomni_headers ${PROJECT_SOURCE_DIR}/runtime)
install(FILES
  ${msomni_headers}/model/model.hpp
  ${msomni_headers}/model/micro_batch.hpp
  ${msomni_headers}/model/model_state.hpp
  ${msomni_headers}/model/plugin_abi.hpp
  ${msomni_headers}/model/plugin_keys.hpp
  ${msomni_headers}/model/text_tokens.hpp
  ${msomni_headers}/model/parameter_layout.hpp
  ${msomni_headers}/model/adamw.hpp
  ${msomni_headers}/model/flat_state.hpp
  ${msomni_headers}/model/host_model.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/msomni/model)
install(FILES ${msomni_headers}/config/job_config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/msomni/config)
install(FILES ${msomni_headers}/core/modality.hpp ${msomni_headers}/core/job_class.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/msomni/core)

# The example model plugin, a CMake project of its own against the installed package.
install(FILES
  ${msomni_headers}/model/examples/byte_bigram/CMakeLists.txt
  ${msomni_headers}/model/examples/byte_bigram/byte_bigram_model.hpp
  ${msomni_headers}/model/examples/byte_bigram/byte_bigram_plugin.cpp
  DESTINATION ${CMAKE_INSTALL_DATADIR}/msomni/examples/byte_bigram)

install(TARGETS msomni_model_headers EXPORT msomniTargets)
install(EXPORT msomniTargets NAMESPACE msomni:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/msomni)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/msomniConfig.cmake.in
  ${PROJECT_BINARY_DIR}/msomniConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/msomni)
# The embedding API changes shape between minor versions (model::plugin_api_version).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/msomniConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/msomniConfig.cmake ${PROJECT_BINARY_DIR}/msomniConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/msomni)

file(RELATIVE_PATH msomni_pc_to_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/msomni-model.pc.in ${PROJECT_BINARY_DIR}/msomni-model.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/msomni-model.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
