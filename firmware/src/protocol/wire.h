/* Wire constants of the hil runner protocol (see firmware/PROTOCOL.md) and little-endian
 * helpers. Everything on the wire is little-endian regardless of the CPU, so the same
 * host client talks to an x86 host build, an aarch64 Pi and a Cortex-M board. */
#ifndef HIL_WIRE_H
#define HIL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define HIL_PROTOCOL_MAJOR 1
#define HIL_PROTOCOL_MINOR 4 /* 1.1: LOAD_FILE (posix runners); 1.2: LINK_STATS; 1.3: TRACE;
                              * 1.4: HELLO says whether a planted fault is compiled in */

#define HIL_MAGIC0 0xA5u
#define HIL_MAGIC1 0x5Au
#define HIL_HEADER_SIZE 12u
#define HIL_TRAILER_SIZE 4u
#define HIL_FRAME_OVERHEAD (HIL_HEADER_SIZE + HIL_TRAILER_SIZE)

/* Requests are 0x01..0x5F; a successful reply has the request's type with HIL_REPLY set
 * (0x81..0xDF). 0xE0..0xFF are the runner's own frames below, so no reply can be mistaken
 * for one of them. */
enum {
    HIL_CMD_HELLO = 0x01,
    HIL_CMD_RESET = 0x02,
    HIL_CMD_ECHO = 0x03,
    HIL_CMD_DEBUG = 0x04,
    HIL_CMD_LOAD_BEGIN = 0x10,
    HIL_CMD_LOAD_CHUNK = 0x11,
    HIL_CMD_LOAD_END = 0x12,
    HIL_CMD_LOAD_FILE = 0x13, /* 1.1: load a model from the runner's own file system */
    HIL_CMD_SET_INPUT = 0x20,
    HIL_CMD_RUN = 0x30,
    HIL_CMD_TRACE = 0x31, /* 1.3: ExecuTorch's ETDump recorder on or off for the held model */
    HIL_CMD_GET_OUTPUT = 0x40,
    HIL_CMD_GET_TRACE = 0x41, /* 1.3: the recorded ETDump or debug buffer, in pieces */
    HIL_CMD_MEM_STATS = 0x50,
    HIL_CMD_FAULT_REPORT = 0x51,
    HIL_CMD_LINK_STATS = 0x52, /* 1.2: what reached the runner, counted by the runner */
};
#define HIL_REPLY 0x80u

/* Frames the runner sends on its own or instead of a reply. */
enum {
    HIL_MSG_LOG = 0xF0,      /* seq 0: a log line */
    HIL_MSG_PROGRESS = 0xF1, /* seq of a running request: still alive */
    HIL_MSG_FAULT = 0xF2,    /* the runner faulted; payload as FAULT_REPORT */
    HIL_MSG_NAK = 0xFD,      /* the request with this seq arrived corrupted: send it again */
    HIL_MSG_ERROR = 0xFE,    /* the request with this seq was refused */
};

/* Error codes carried by HIL_MSG_ERROR. */
enum {
    HIL_ERR_BAD_REQUEST = 1,
    HIL_ERR_UNKNOWN_COMMAND = 2,
    HIL_ERR_VERSION_MISMATCH = 3,
    HIL_ERR_TOO_LARGE = 4,
    HIL_ERR_NO_MODEL = 5,
    HIL_ERR_HASH_MISMATCH = 6,
    HIL_ERR_LOAD_FAILED = 7,
    HIL_ERR_BAD_INPUT = 8,
    HIL_ERR_RUN_FAILED = 9,
    HIL_ERR_OUT_OF_MEMORY = 10,
    HIL_ERR_SEQUENCE = 11,
    HIL_ERR_UNSUPPORTED = 12,
    HIL_ERR_MISSING_OPERATOR = 13, /* text: the operator's name */
};

enum { HIL_CLOCK_TIME_NS = 0, HIL_CLOCK_CYCLES = 1 };
enum { HIL_ENGINE_ECHO = 0, HIL_ENGINE_EXECUTORCH = 1 };
enum { HIL_DEBUG_HANG = 1, HIL_DEBUG_FAULT = 2 };
enum {
    HIL_HELLO_HOLDS_MODEL = 1u,
    HIL_HELLO_DEBUG = 2u,
    HIL_HELLO_FILE_LOAD = 4u,
    HIL_HELLO_TRACE = 8u, /* 1.3: built with ExecuTorch's ETDump (TRACE, GET_TRACE) */
    HIL_HELLO_PLANTED_FAULT = 16u, /* 1.4: a kernel wrong on purpose (HIL_PLANTED_FAULT) */
};

static inline void hil_put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void hil_put_u32(uint8_t *p, uint32_t v) {
    hil_put_u16(p, (uint16_t)v);
    hil_put_u16(p + 2, (uint16_t)(v >> 16));
}
static inline void hil_put_u64(uint8_t *p, uint64_t v) {
    hil_put_u32(p, (uint32_t)v);
    hil_put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t hil_get_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t hil_get_u32(const uint8_t *p) {
    return (uint32_t)hil_get_u16(p) | ((uint32_t)hil_get_u16(p + 2) << 16);
}
static inline uint64_t hil_get_u64(const uint8_t *p) {
    return (uint64_t)hil_get_u32(p) | ((uint64_t)hil_get_u32(p + 4) << 32);
}

#endif
