/* board.h - the few registers of the Arm MPS2 boards (AN385 Cortex-M3,
 * AN386 Cortex-M4; QEMU -M mps2-an385 / mps2-an386) that the firmware
 * example uses: UART0 (CMSDK APB UART), TIMER0/TIMER1 (CMSDK APB timers),
 * and the NVIC set/clear-pending registers. Port the example to another MCU
 * by replacing this file and the three board_* sections of main.c. */
#ifndef FIRMWARE_BOARD_H
#define FIRMWARE_BOARD_H
#include <stdint.h>

#define BOARD_PCLK_HZ 25000000u /* APB clock of UARTs and timers on MPS2 */

/* CMSDK APB UART (ARM DDI0479C 4.3): a one-byte buffer each way. */
typedef struct {
    volatile uint32_t data;      /* read: the received byte; write: send a byte */
    volatile uint32_t state;     /* bit 0 TX buffer full, bit 1 RX buffer full */
    volatile uint32_t ctrl;      /* bit 0 TX enable, 1 RX enable, 3 RX interrupt enable */
    volatile uint32_t intstatus; /* write 1 to clear; bit 1 RX */
    volatile uint32_t bauddiv;   /* PCLK / baud, at least 16 */
} board_uart;
#define BOARD_UART0 ((board_uart *)0x40004000u)
#define UART_STATE_TXFULL 1u
#define UART_STATE_RXFULL 2u
#define UART_CTRL_TXEN 1u
#define UART_CTRL_RXEN 2u
#define UART_CTRL_RXIRQ 8u
#define UART_INT_RX 2u

/* CMSDK APB timer (DDI0479C 4.4): a 32-bit down counter at PCLK that
 * reloads from `reload` at zero. */
typedef struct {
    volatile uint32_t ctrl;      /* bit 0 enable, bit 3 interrupt enable */
    volatile uint32_t value;
    volatile uint32_t reload;
    volatile uint32_t intclear;  /* read: status; write 1: clear */
} board_timer;
#define BOARD_TIMER0 ((board_timer *)0x40000000u) /* free-running: the clock */
#define BOARD_TIMER1 ((board_timer *)0x40001000u) /* one-shot: wakes the superloop */
#define TIMER_CTRL_EN 1u
#define TIMER_CTRL_IRQ 8u

/* NVIC interrupt numbers on MPS2 (AN385/AN386): UART0 RX 0, TIMER1 9. */
#define BOARD_IRQ_UART0_RX 0u
#define BOARD_IRQ_TIMER1 9u
#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100u)
#define NVIC_ICPR0 (*(volatile uint32_t *)0xE000E280u)

#endif
