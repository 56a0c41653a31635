/* The dispatch table: request type -> handler. A new request is a handler in handlers.h and a
 * line here; a type not in the table is refused as UNKNOWN_COMMAND. */
#include <stddef.h>

#include "codec.h"
#include "commands.h"
#include "frame.h"
#include "handlers.h"
#include "reply.h"
#include "state.h"

static const struct {
    uint8_t type;
    hil_handler_t handle;
} handlers[] = {
    {HIL_CMD_HELLO, hil_cmd_hello},
    {HIL_CMD_RESET, hil_cmd_reset},
    {HIL_CMD_ECHO, hil_cmd_echo},
    {HIL_CMD_DEBUG, hil_cmd_debug},
    {HIL_CMD_LOAD_BEGIN, hil_cmd_load_begin},
    {HIL_CMD_LOAD_CHUNK, hil_cmd_load_chunk},
    {HIL_CMD_LOAD_END, hil_cmd_load_end},
#ifdef HIL_FILE_LOAD
    {HIL_CMD_LOAD_FILE, hil_cmd_load_file},
#endif
    {HIL_CMD_SET_INPUT, hil_cmd_set_input},
    {HIL_CMD_RUN, hil_cmd_run},
    {HIL_CMD_GET_OUTPUT, hil_cmd_get_output},
    {HIL_CMD_TRACE, hil_cmd_trace},
    {HIL_CMD_GET_TRACE, hil_cmd_get_trace},
    {HIL_CMD_MEM_STATS, hil_cmd_mem_stats},
    {HIL_CMD_FAULT_REPORT, hil_cmd_fault_report},
    {HIL_CMD_LINK_STATS, hil_cmd_link_stats},
};

void hil_dispatch(hil_server_t *s, const hil_frame_t *frame) {
    hil_reader_t r = {frame->payload, frame->len, 0};
    for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
        if (handlers[i].type == frame->type) {
            handlers[i].handle(s, &r);
            return;
        }
    }
    hil_refuse(s, HIL_ERR_UNKNOWN_COMMAND, frame->type, 0, "unknown request type 0x%02x",
               frame->type);
}
