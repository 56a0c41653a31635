#include "cmsdk_uart.h"

#define REG(offset) (*(volatile uint32_t *)(uart_base + (offset)))
#define DATA 0x00u
#define STATE 0x04u
#define CTRL 0x08u
#define BAUDDIV 0x10u
#define STATE_TX_FULL 1u
#define STATE_RX_FULL 2u
#define CTRL_TX_EN 1u
#define CTRL_RX_EN 2u

static uint32_t uart_base;

void hil_uart_init(uint32_t base, uint32_t cpu_hz, uint32_t baud) {
    uart_base = base;
    uint32_t div = cpu_hz / baud;
    REG(BAUDDIV) = div < 16u ? 16u : div; /* the UART refuses dividers below 16 */
    REG(CTRL) = CTRL_TX_EN | CTRL_RX_EN;
}

void hil_uart_write(const uint8_t *data, uint32_t len) {
    for (uint32_t i = 0; i < len; i++) {
        while (REG(STATE) & STATE_TX_FULL) {
        }
        REG(DATA) = data[i];
    }
}

int hil_uart_getc(void) {
    if (REG(STATE) & STATE_RX_FULL) return (int)(REG(DATA) & 0xFFu);
    return -1;
}
