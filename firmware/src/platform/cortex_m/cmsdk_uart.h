/* CMSDK APB UART, polled. The runner's protocol is request/reply, so the board never has to
 * receive while it is busy computing; polling loses nothing and needs no interrupt wiring. */
#ifndef HIL_CMSDK_UART_H
#define HIL_CMSDK_UART_H

#include <stdint.h>

void hil_uart_init(uint32_t base, uint32_t cpu_hz, uint32_t baud);
void hil_uart_write(const uint8_t *data, uint32_t len);
/* One received byte, or -1 if none is waiting. */
int hil_uart_getc(void);

#endif
