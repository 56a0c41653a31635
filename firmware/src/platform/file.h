/* Files on the runner's own file system, for LOAD_FILE (PROTOCOL.md 1.1): a runner on a Linux
 * board loads a model the host copied there (by SFTP) instead of receiving it over the link,
 * so a model that is already on the board's disk moves no bytes. Posix platforms have it
 * (HIL_FILE_LOAD); bare-metal runners built with semihosting read the host's files through it
 * (cortex_m/file_semihost.c) while a debugger or emulator serves semihosting. Others answer
 * LOAD_FILE as an unknown command. */
#ifndef HIL_PLATFORM_FILE_H
#define HIL_PLATFORM_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether files can be opened now (bare metal: semihosting is served); the handshake offers
 * LOAD_FILE only then. */
int hil_file_available(void);

/* Open `path` for reading; its size in *size. Returns a handle >= 0, or -1 with the reason
 * (the system's words, e.g. "No such file or directory") in `why`. */
int hil_file_open(const char *path, uint64_t *size, char *why, size_t why_cap);

/* Up to `cap` bytes; 0 at the end, -1 with the reason in `why`. */
long hil_file_read(int handle, uint8_t *buf, size_t cap, char *why, size_t why_cap);

void hil_file_close(int handle);

#ifdef __cplusplus
}
#endif

#endif
