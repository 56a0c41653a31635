/* The model the runner holds, as the handlers share it: its method as replies describe it,
 * the reply of a request that left it held, and forgetting it and its inputs. */
#ifndef HIL_HELD_H
#define HIL_HELD_H

#include <stdint.h>

#include "codec.h"
#include "state.h"

/* The loaded method's inputs and outputs, as LOAD_END (and LOAD_BEGIN of a held model) report. */
void hil_write_method(hil_server_t *s, hil_writer_t *w);
/* Reply to a request that left a model held: `held` (1: it was held before) + the method. */
void hil_reply_loaded(hil_server_t *s, uint8_t type, uint8_t held);
void hil_clear_inputs(hil_server_t *s);
/* Forget the model, a transfer under way, the inputs and an armed debug op (not the hash). */
void hil_soft_reset(hil_server_t *s);

#endif
