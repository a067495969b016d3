/* The C side of a lowered kernel's run (ninetoothed_ascend.check.lowered).
 *
 * A fault in a kernel kills the child process that runs it; before it dies,
 * the handler writes what it knows (signal, faulting address, instruction,
 * access kind, program) to a file descriptor the parent reads. Only
 * async-signal-safe calls (write, _exit) happen in the handler.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define NTL_FAULT_EXIT 86

struct ntl_report {
    int64_t signo;
    int64_t code;
    int64_t address;
    int64_t instruction;
    /* 1: write, 0: read, -1: unknown (decoded from the page-fault error code on x86-64). */
    int64_t write;
    int64_t program[3];
};

static volatile int32_t ntl_programs[3];
static int ntl_fd = -1;
static char ntl_stack[1 << 16];

/* Called by the generated driver before each program. */
void ntl_program(int32_t x, int32_t y, int32_t z) {
    ntl_programs[0] = x;
    ntl_programs[1] = y;
    ntl_programs[2] = z;
}

static void ntl_handler(int signo, siginfo_t *info, void *context) {
    ucontext_t *ucontext = context;
    struct ntl_report report;

    report.signo = signo;
    report.code = info->si_code;
    report.address = (int64_t)(intptr_t)info->si_addr;
#if defined(__x86_64__)
    report.instruction = ucontext->uc_mcontext.gregs[REG_RIP];
    report.write = signo == SIGSEGV ? (ucontext->uc_mcontext.gregs[REG_ERR] & 2) != 0 : -1;
#elif defined(__aarch64__)
    report.instruction = (int64_t)ucontext->uc_mcontext.pc;
    report.write = -1;
#else
    (void)ucontext;
    report.instruction = 0;
    report.write = -1;
#endif
    report.program[0] = ntl_programs[0];
    report.program[1] = ntl_programs[1];
    report.program[2] = ntl_programs[2];

    if (write(ntl_fd, &report, sizeof report) < 0) {
        _exit(NTL_FAULT_EXIT + 1);
    }

    _exit(NTL_FAULT_EXIT);
}

/* Report faults to file descriptor fd; returns 0, or -1 if a handler could not be installed. */
int ntl_install(int fd) {
    static const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    stack_t stack;
    struct sigaction action;

    ntl_fd = fd;
    stack.ss_sp = ntl_stack;
    stack.ss_size = sizeof ntl_stack;
    stack.ss_flags = 0;

    if (sigaltstack(&stack, NULL) != 0) {
        return -1;
    }

    memset(&action, 0, sizeof action);
    action.sa_sigaction = ntl_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);

    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; ++i) {
        if (sigaction(signals[i], &action, NULL) != 0) {
            return -1;
        }
    }

    return 0;
}

int ntl_report_size(void) { return (int)sizeof(struct ntl_report); }

#if defined(__x86_64__)
/* float -> bfloat16, rounding to nearest even, for LLVM's `fptrunc float to
 * bfloat` on a CPU without AVX512-BF16: LLVM 19 calls __truncsfbf2, which
 * libgcc has only from GCC 13 on. The x86-64 psABI passes a bfloat16 in the
 * low 16 bits of an SSE register; GCC 12 has no __bf16 type, so the result
 * travels as a float whose low 16 bits are the bfloat16's. */
float __truncsfbf2(float value) {
    uint32_t bits;
    uint32_t result;
    float out;

    memcpy(&bits, &value, sizeof bits);

    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        result = (bits >> 16) | 0x40u; /* NaN stays a quiet NaN */
    } else {
        result = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    }

    memcpy(&out, &result, sizeof out);
    return out;
}
#endif
