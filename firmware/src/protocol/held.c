/* The held model's helpers (held.h). */
#include <string.h>

#include "codec.h"
#include "held.h"
#include "reply.h"
#include "state.h"

void hil_write_method(hil_server_t *s, hil_writer_t *w) {
    size_t n_in = s->engine->num_inputs(), n_out = s->engine->num_outputs();
    hil_wr_u8(w, (uint8_t)n_in);
    hil_wr_u8(w, (uint8_t)n_out);
    for (size_t i = 0; i < n_in + n_out; i++) {
        hil_tensor_desc_t d = {0};
        if (i < n_in) {
            s->engine->input_desc(i, &d);
        } else {
            const uint8_t *unused;
            s->engine->output(i - n_in, &d, &unused);
        }
        hil_write_desc(w, &d);
    }
}

void hil_reply_loaded(hil_server_t *s, uint8_t type, uint8_t held) {
    if (!held) {
        hil_clear_inputs(s);
        s->tracing = 0; /* a new model is loaded without the recorder */
    }
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u8(&w, held);
    hil_write_method(s, &w);
    hil_reply(s, type, (uint32_t)w.used);
}

void hil_clear_inputs(hil_server_t *s) {
    memset(s->input_buf, 0, sizeof(s->input_buf));
    memset(s->input_size, 0, sizeof(s->input_size));
    memset(s->input_received, 0, sizeof(s->input_received));
}

void hil_soft_reset(hil_server_t *s) {
    s->engine->unload();
    s->loading = 0;
    s->holds_model = 0;
    hil_clear_inputs(s);
    s->debug_arm = 0;
    s->tracing = 0;
}
