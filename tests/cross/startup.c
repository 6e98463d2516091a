/* startup.c - the smallest bare-metal start for the Cortex-M test images of
 * `make cross` (tests/cross/run.sh): a vector table, a reset handler that
 * copies .data and zeroes .bss, then main() with newlib's semihosting
 * (librdimon) for stdout and the exit status. A fault prints its name and
 * exits non-zero instead of hanging QEMU. Linked with -nostartfiles and a
 * board's linker script (cortex-m0.ld, cortex-m4.ld -> sections.ld). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end, __stack_top;
extern void initialise_monitor_handles(void); /* librdimon: semihosting stdio */
extern int main(void);

#include "baremetal.h"

void rlock_cross_reset(void);
void rlock_cross_fault(void);

/* A suite that sets its hooks never reaches these defaults (baremetal.h). */
static void rlock_cross_die(const char *what) {
    printf("cross: the default %s was called: a test left its hook unset\n", what);
    exit(98);
}
uint64_t rlock_cross_no_clock(void) { rlock_cross_die("RLOCK_NOW_MS"); return 0; }
void rlock_cross_no_sleep(uint32_t ms) { (void)ms; rlock_cross_die("RLOCK_SLEEP_MS"); }
int rlock_cross_no_random(unsigned char *buf, size_t n) { (void)buf; (void)n; rlock_cross_die("RLOCK_RANDOM_BYTES"); return -1; }

/* newlib's init/fini arrays call these; crti.o, which has them, is not
 * linked (-nostartfiles) and nothing needs them. */
void _init(void);
void _fini(void);
void _init(void) { }
void _fini(void) { }

void rlock_cross_reset(void) {
    uint32_t *s = &__data_load, *d = &__data_start;
    while (d < &__data_end) *d++ = *s++;
    for (d = &__bss_start; d < &__bss_end; d++) *d = 0;
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
    /* CCR.UNALIGN_TRP: an unaligned word or halfword access faults, as it
     * always does on a Cortex-M0 (QEMU 7.2 does not model that on the M0). */
    *(volatile uint32_t *)0xE000ED14u |= 1u << 3;
#endif
    initialise_monitor_handles();
    exit(main());
}

/* HardFault, NMI and the configurable faults (M3/M4) all land here: the
 * trampoline hands the exception frame (r0-r3, r12, lr, pc, xpsr) to C so
 * the report names the faulting instruction (arm-none-eabi-addr2line). */
void rlock_cross_fault_frame(const uint32_t *frame);
void rlock_cross_fault_frame(const uint32_t *frame) {
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    printf("cross: fault: exception %lu (3 HardFault, 4 MemManage, 5 BusFault, 6 UsageFault) at pc 0x%08lx, lr 0x%08lx\n",
           (unsigned long)(ipsr & 0x1ffu), (unsigned long)frame[6], (unsigned long)frame[5]);
    exit(99);
}
__attribute__((naked)) void rlock_cross_fault(void) {
    __asm__ volatile("mov r0, sp\n\tldr r1, =rlock_cross_fault_frame\n\tbx r1\n\t.ltorg");
}

/* Initial SP, reset, then NMI .. UsageFault (2..6); the rest is unused:
 * no interrupt is ever enabled. */
__attribute__((section(".vectors"), used))
static void (*const rlock_cross_vectors[7])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top, rlock_cross_reset,
    rlock_cross_fault, rlock_cross_fault, rlock_cross_fault, rlock_cross_fault, rlock_cross_fault,
};
