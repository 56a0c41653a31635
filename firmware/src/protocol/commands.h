/* The dispatch: which handler (handlers.h) answers a request type. */
#ifndef HIL_COMMANDS_H
#define HIL_COMMANDS_H

#include "frame.h"
#include "state.h"

/* One request: `frame` is a checked frame of a request type; its handler sends one reply. */
void hil_dispatch(hil_server_t *s, const hil_frame_t *frame);

#endif
