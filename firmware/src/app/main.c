/* The runner: platform, then engine, then the protocol server until the link closes. */
#include <stdlib.h>

#include "../engine/engine.h"
#include "../platform/platform.h"
#include "../protocol/server.h"
#include "../protocol/wire.h"

#ifndef HIL_MAX_PAYLOAD
#define HIL_MAX_PAYLOAD (1u << 20)
#endif
#ifndef HIL_GAP_MS
#define HIL_GAP_MS 250u
#endif

/* Frame buffers: static on every platform, so bare-metal builds place them by linker script
 * and a host build needs no allocation before it can report an error. */
static uint8_t rx_buf[HIL_MAX_PAYLOAD + HIL_FRAME_OVERHEAD + 64] __attribute__((aligned(16)));
static uint8_t tx_buf[HIL_MAX_PAYLOAD + HIL_FRAME_OVERHEAD] __attribute__((aligned(16)));

int main(int argc, char **argv) {
    int status = hil_platform_init(argc, argv);
    if (status != 0) return status;
#ifdef HIL_WITH_EXECUTORCH
    const hil_engine_t *engine = &hil_executorch_engine;
    if (hil_platform_engine_choice(HIL_ENGINE_EXECUTORCH) == HIL_ENGINE_ECHO) {
        engine = &hil_echo_engine;
    }
#else
    const hil_engine_t *engine = &hil_echo_engine;
    (void)hil_platform_engine_choice(HIL_ENGINE_ECHO);
#endif
    return hil_server_run(engine, rx_buf, sizeof(rx_buf), tx_buf, sizeof(tx_buf), HIL_GAP_MS);
}
