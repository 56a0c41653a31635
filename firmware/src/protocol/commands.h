/* What the command files (commands.c, load.c, run.c) share: reply helpers and handlers. */
#ifndef HIL_COMMANDS_H
#define HIL_COMMANDS_H

#include "codec.h"
#include "server.h"

void hil_refuse(hil_server_t *s, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
hil_writer_t hil_reply_writer(hil_server_t *s);
void hil_write_desc(hil_writer_t *w, const hil_tensor_desc_t *d);
void hil_write_method(hil_server_t *s, hil_writer_t *w);
void hil_clear_inputs(hil_server_t *s);

void hil_cmd_load_begin(hil_server_t *s, hil_reader_t *r);
void hil_cmd_load_chunk(hil_server_t *s, hil_reader_t *r);
void hil_cmd_load_end(hil_server_t *s);
void hil_cmd_set_input(hil_server_t *s, hil_reader_t *r);
void hil_cmd_run(hil_server_t *s, hil_reader_t *r);
void hil_cmd_get_output(hil_server_t *s, hil_reader_t *r);

#endif
