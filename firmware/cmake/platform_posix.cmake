# Posix platform: a process whose link is stdio, a tty or an inherited descriptor.
target_sources(hil-runner PRIVATE ${HIL_SRC}/platform/posix/platform_posix.c)
target_compile_definitions(hil-runner PRIVATE HIL_MAX_PAYLOAD=1048576u HIL_GAP_MS=250u)
target_compile_definitions(hil_protocol PRIVATE HIL_RX_WINDOW=8)
# The model's SHA-256 is hashed on a worker thread while the link keeps receiving.
find_package(Threads REQUIRED)
target_sources(hil_protocol PRIVATE ${HIL_SRC}/platform/posix/digest_worker.c)
target_link_libraries(hil_protocol PUBLIC Threads::Threads)

# The frame check and the model hash sit on the transfer's critical path; where the system
# offers zlib's and OpenSSL's accelerated versions, use them (the portable ones remain).
find_package(ZLIB QUIET)
if(ZLIB_FOUND)
  target_compile_definitions(hil_protocol PRIVATE HIL_HAVE_ZLIB=1)
  target_link_libraries(hil_protocol PUBLIC ZLIB::ZLIB)
endif()
find_package(OpenSSL QUIET COMPONENTS Crypto)
if(OpenSSL_FOUND)
  target_compile_definitions(hil_protocol PRIVATE HIL_HAVE_OPENSSL=1)
  target_link_libraries(hil_protocol PUBLIC OpenSSL::Crypto)
endif()
message(STATUS "hil-runner: zlib crc32 ${ZLIB_FOUND}, OpenSSL sha256 ${OpenSSL_FOUND}")

# LOAD_FILE (protocol 1.1): a runner on a Linux board loads a model the host copied to its disk.
target_sources(hil_protocol PRIVATE ${HIL_SRC}/protocol/load_file.c
                                    ${HIL_SRC}/platform/posix/file_posix.c)
target_compile_definitions(hil_protocol PUBLIC HIL_FILE_LOAD=1)

# aarch64 Linux (the Pi): SHA-256 with the Armv8 Cryptography Extension where the CPU has it
# (checked at run time), so checking a 650 MB model does not take seconds.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$" AND NOT OpenSSL_FOUND)
  target_sources(hil_protocol PRIVATE ${HIL_SRC}/protocol/sha256_armv8.c)
  set_source_files_properties(${HIL_SRC}/protocol/sha256_armv8.c PROPERTIES
                              COMPILE_OPTIONS "-march=armv8-a+crypto")
  target_compile_definitions(hil_protocol PRIVATE HIL_SHA256_BLOCKS_ACCEL=1)
endif()
