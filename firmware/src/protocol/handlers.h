/* The request handlers, one per request type (PROTOCOL.md). Each parses its payload with a
 * bounds-checked reader, asks the engine, and answers with exactly one reply or ERROR frame
 * (reply.h); commands.c maps request types to them.
 *   info.c       HELLO, RESET, ECHO, DEBUG, MEM_STATS, LINK_STATS, FAULT_REPORT
 *   load.c       LOAD_BEGIN, LOAD_CHUNK, LOAD_END: a model over the link
 *   load_file.c  LOAD_FILE: a model from the runner's own file system (HIL_FILE_LOAD)
 *   run.c        SET_INPUT, RUN, GET_OUTPUT
 *   trace.c      TRACE, GET_TRACE: an explaining run's ETDump */
#ifndef HIL_HANDLERS_H
#define HIL_HANDLERS_H

#include "codec.h"
#include "state.h"

/* `r` reads the request's payload. */
typedef void (*hil_handler_t)(hil_server_t *s, hil_reader_t *r);

void hil_cmd_hello(hil_server_t *s, hil_reader_t *r);
void hil_cmd_reset(hil_server_t *s, hil_reader_t *r);
void hil_cmd_echo(hil_server_t *s, hil_reader_t *r);
void hil_cmd_debug(hil_server_t *s, hil_reader_t *r);
void hil_cmd_mem_stats(hil_server_t *s, hil_reader_t *r);
void hil_cmd_link_stats(hil_server_t *s, hil_reader_t *r);
void hil_cmd_fault_report(hil_server_t *s, hil_reader_t *r);

void hil_cmd_load_begin(hil_server_t *s, hil_reader_t *r);
void hil_cmd_load_chunk(hil_server_t *s, hil_reader_t *r);
void hil_cmd_load_end(hil_server_t *s, hil_reader_t *r);
#ifdef HIL_FILE_LOAD
void hil_cmd_load_file(hil_server_t *s, hil_reader_t *r);
#endif

void hil_cmd_set_input(hil_server_t *s, hil_reader_t *r);
void hil_cmd_run(hil_server_t *s, hil_reader_t *r);
void hil_cmd_get_output(hil_server_t *s, hil_reader_t *r);

void hil_cmd_trace(hil_server_t *s, hil_reader_t *r);
void hil_cmd_get_trace(hil_server_t *s, hil_reader_t *r);

#endif
