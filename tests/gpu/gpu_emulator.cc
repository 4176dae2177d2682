/* The CPU emulator under the emulated GPU checks (gpu_emulator/vendor.h): a block's threads are
 * fibers (each on its own stack) run in turn up to their next barrier. A block barrier releases
 * when every thread of the block has reached it, a warp barrier (shuffles, __syncwarp and the
 * warp-wide tensor-core instructions exchange through one) when every lane of the warp has (at a warp of
 * 64, every lane that has not left the kernel: a wavefront shuffles among its active lanes; a
 * shuffle that reads a lane that left is reported); a thread that leaves the kernel while others
 * wait at a block barrier is reported (on a GPU that would hang or corrupt shared memory), and so
 * are lanes of one warp waiting at different kinds of barrier.
 * Shared memory is static storage, reused by the blocks, which run one after the other.
 *
 * The tensor-core instructions (warp width 32 only) are emulated from the PTX ISA's fragment
 * layouts, so that a kernel's fragment bookkeeping is checked on the CPU: ldmatrix (m8n8 .x4 of
 * 16-bit elements, plain and .trans) and mma.sync m16n8k16 with bf16 inputs and f32 accumulators
 * (products summed in double and rounded once: the hardware's own summation order is not
 * specified, so results agree within f32 rounding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#define SY_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SY_EMU_ASAN 1
#endif
#endif
#ifdef SY_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#include <deque>
#include <vector>

#include "vendor.h"

#include "sy_numeric.h"

dim3 sy_emu_thread_idx, sy_emu_block_idx, sy_emu_block_dim, sy_emu_grid_dim;

#if defined(__x86_64__)
/* Saves rbp, rbx, r12-r15 (the System V ABI's callee-saved registers; the code run here leaves
 * MXCSR and the x87 control word as they are) on the current stack, stores the stack pointer at
 * *save_sp, and continues where next_sp was saved: its registers popped, then its return. */
extern "C" void sy_emu_switch_stack(void **save_sp, void *next_sp);
asm(".text\n"
    ".globl sy_emu_switch_stack\n"
    ".type sy_emu_switch_stack, @function\n"
    "sy_emu_switch_stack:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size sy_emu_switch_stack, .-sy_emu_switch_stack\n");
#endif

namespace {
enum { RUNNABLE, AT_BARRIER, AT_WARP_BARRIER, DONE };
/* Whether a warp barrier goes on without the lanes that have left the kernel. A wavefront of 64
 * (HIP) shuffles among its active lanes, so lanes may leave first as long as nobody reads them;
 * CUDA's *_sync intrinsics name all 32 lanes, and a lane that left is an error there. */
constexpr bool LANES_MAY_LEAVE = SY_EMU_WARP_SIZE == 64;
enum { STACK_BYTES = 256 * 1024 };

/* A fiber runs the kernel body once per block for as long as the program runs: it is made once,
 * when a launch first needs that many threads, and waits for the next block where it ended the
 * last one. Fibers and their stacks never move: a waiting fiber's saved state points into both.
 *
 * Switching. On x86-64, sy_emu_switch_stack below: the callee-saved registers go onto the old
 * stack and the stack pointer is swapped, a few nanoseconds; swapcontext, which the other
 * architectures use, makes a system call for the signal mask every time (2.2 us a round trip
 * here; 90% of the emulator's time under perf), and under AddressSanitizer also clears the shadow
 * of the whole stack it enters. AddressSanitizer is told of every switch instead (its fiber
 * interface), so that it checks each fiber's stack as the stack it is. */
#if defined(__x86_64__)
#define SY_EMU_STACK_SWITCH 1
#else
#define SY_EMU_STACK_SWITCH 0
#endif

struct fiber {
#if SY_EMU_STACK_SWITCH
    void *sp; /* where the fiber waits: its callee-saved registers, then where to go on */
#else
    ucontext_t context;
#endif
    void *fake_stack; /* AddressSanitizer's, for the switch back */
    int state;
    std::vector<char> stack;
};

std::deque<fiber> fibers; /* grows at the end only: its elements stay where they are */
std::vector<float> exchange;
/* What the lanes of a warp hand each other for ldmatrix and mma. */
std::vector<const void *> exchange_row;
std::vector<uint32_t> exchange_frag; /* FRAG words a thread */
enum { FRAG = 10 };
/* Lanes of each warp that have taken their outputs of the current mma (emu_mma). */
std::vector<unsigned> mma_readers;
std::vector<unsigned char> dynamic_shared;
#if SY_EMU_STACK_SWITCH
void *scheduler_sp;
#else
ucontext_t scheduler;
#endif
void *scheduler_fake_stack;
const void *scheduler_stack_bottom; /* the thread's own stack, where the scheduler runs */
size_t scheduler_stack_size;
unsigned current;
const std::function<void()> *kernel_body;

#ifdef SY_EMU_ASAN
void asan_start_switch(void **fake_stack, const void *bottom, size_t size)
{
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
void asan_finish_switch(void *fake_stack, const void **from_bottom, size_t *from_size)
{
    __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_size);
}
#else
void asan_start_switch(void **, const void *, size_t) {}
void asan_finish_switch(void *, const void **, size_t *) {}
#endif

/* The running fiber hands control back to the scheduler, and returns when it is resumed. */
void to_scheduler()
{
    fiber &me = fibers[current];
    asan_start_switch(&me.fake_stack, scheduler_stack_bottom, scheduler_stack_size);
#if SY_EMU_STACK_SWITCH
    sy_emu_switch_stack(&me.sp, scheduler_sp);
#else
    swapcontext(&me.context, &scheduler);
#endif
    asan_finish_switch(me.fake_stack, nullptr, nullptr);
}

/* The scheduler runs the current fiber up to its next barrier or its end. */
void resume_current()
{
    fiber &f = fibers[current];
    asan_start_switch(&scheduler_fake_stack, f.stack.data(), f.stack.size());
#if SY_EMU_STACK_SWITCH
    sy_emu_switch_stack(&scheduler_sp, f.sp);
#else
    swapcontext(&scheduler, &f.context);
#endif
    asan_finish_switch(scheduler_fake_stack, nullptr, nullptr);
}

/* Where a fiber starts, on its first switch in; it never returns. */
void fiber_entry()
{
    asan_finish_switch(nullptr, &scheduler_stack_bottom, &scheduler_stack_size);
    for (;;) {
        (*kernel_body)();
        fibers[current].state = DONE;
        to_scheduler(); /* resumed for the next block, of this launch or a later one */
    }
}
} // namespace

void sy_emu_syncthreads(void)
{
    fibers[current].state = AT_BARRIER;
    to_scheduler();
}

void sy_emu_syncwarp(void)
{
    fibers[current].state = AT_WARP_BARRIER;
    to_scheduler();
}

float sy_emu_shfl_xor(float value, int lane_mask)
{
    const unsigned me = current;
    exchange[me] = value;
    sy_emu_syncwarp();
    if (fibers[me ^ (unsigned)lane_mask].state == DONE) {
        fprintf(stderr, "emulator: lane %u shuffles with lane %u, which has left the kernel\n", me % SY_EMU_WARP_SIZE,
                (me ^ (unsigned)lane_mask) % SY_EMU_WARP_SIZE);
        abort();
    }
    const float other = exchange[me ^ (unsigned)lane_mask];
    sy_emu_syncwarp();
    return other;
}

void sy_emu_ldmatrix_x4(uint32_t r[4], const void *row, bool trans)
{
    const unsigned me = current, lane = me % 32, warp0 = me - lane, g = lane / 4, c = lane % 4;
    exchange_row[me] = row;
    sy_emu_syncwarp();
    for (unsigned i = 0; i < 4; i++) {
        const uint16_t *const *rows = (const uint16_t *const *)&exchange_row[warp0 + 8 * i];
        /* plain: row g, elements 2c and 2c+1; .trans: element g of rows 2c and 2c+1 */
        const uint32_t lo = trans ? rows[2 * c][g] : rows[g][2 * c];
        const uint32_t hi = trans ? rows[2 * c + 1][g] : rows[g][2 * c + 1];
        r[i] = lo | hi << 16;
    }
    sy_emu_syncwarp();
}

static double bf16_value(uint16_t h)
{
    return (double)sy_bf16_to_f32(h);
}

static double f16_value(uint16_t h)
{
    return (double)sy_f16_to_f32(h);
}

uint16_t sy_emu_f32_to_f16(float x)
{
    const uint16_t sign = signbit(x) ? 0x8000u : 0u;
    if (isnan(x))
        return 0x7E00u;
    double a = fabs((double)x);
    if (a >= 65520.0) /* rounds past the largest finite f16, 65504 */
        return sign | 0x7C00u;
    /* The f16 grid at a's binade (subnormals share 2^-24), rounded to nearest even. */
    int exp;
    frexp(a, &exp); /* a = f 2^exp, f in [0.5, 1) */
    const int quantum = exp - 11 < -24 ? -24 : exp - 11;
    const double q = nearbyint(ldexp(a, -quantum)); /* FE_TONEAREST: ties to even */
    const double r = ldexp(q, quantum);
    if (r == 0.0)
        return sign;
    int e;
    frexp(r, &e);
    if (e - 1 < -14) /* subnormal: r = m 2^-24 */
        return sign | (uint16_t)q;
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)(ldexp(r, 11 - e) - 1024.0);
}

static void emu_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, double (*value)(uint16_t));

void sy_emu_mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    emu_mma(d, a, b0, b1, bf16_value);
}

void sy_emu_mma_f16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    emu_mma(d, a, b0, b1, f16_value);
}

static void emu_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, double (*value)(uint16_t))
{
    const auto half = [value](uint32_t word, unsigned h) { return value((uint16_t)(h ? word >> 16 : word & 0xFFFFu)); };
    const unsigned me = current, lane = me % 32, warp0 = me - lane;
    uint32_t *mine = &exchange_frag[(size_t)me * FRAG];
    for (int i = 0; i < 4; i++) {
        mine[i] = a[i];
        memcpy(&mine[6 + i], &d[i], sizeof d[i]);
    }
    mine[4] = b0;
    mine[5] = b1;
    sy_emu_syncwarp();
    /* The first lane to run after the barrier computes the warp's tile and leaves each lane its
     * outputs in its own FRAG words 6 .. 9 (in place of its accumulators, read first). */
    unsigned &readers = mma_readers[warp0 / 32];
    if (readers++ == 0) {
        /* A (16 x 16): lane 4g'+c' holds rows g', g'+8 at columns 2c', 2c'+1 (registers 0, 1) and
         * 2c'+8, 2c'+9 (2, 3); B (16 x 8): k-rows 2c', 2c'+1 (register 0) and 2c'+8, 2c'+9 (1) of
         * column g'; C and D (16 x 8): rows g', g'+8 at columns 2c', 2c'+1. */
        double A[16][16], B[16][8];
        float C[16][8];
        for (unsigned l = 0; l < 32; l++) {
            const uint32_t *f = &exchange_frag[(size_t)(warp0 + l) * FRAG];
            const unsigned gl = l / 4, cl = l % 4;
            for (unsigned h = 0; h < 2; h++) {
                A[gl][2 * cl + h] = half(f[0], h);
                A[gl + 8][2 * cl + h] = half(f[1], h);
                A[gl][2 * cl + 8 + h] = half(f[2], h);
                A[gl + 8][2 * cl + 8 + h] = half(f[3], h);
                B[2 * cl + h][gl] = half(f[4], h);
                B[2 * cl + 8 + h][gl] = half(f[5], h);
            }
            for (unsigned r = 0; r < 4; r++)
                memcpy(&C[gl + 8 * (r / 2)][2 * cl + r % 2], &f[6 + r], sizeof(float));
        }
        for (unsigned l = 0; l < 32; l++) {
            uint32_t *f = &exchange_frag[(size_t)(warp0 + l) * FRAG];
            const unsigned gl = l / 4, cl = l % 4;
            for (unsigned r = 0; r < 4; r++) {
                const unsigned row = gl + 8 * (r / 2), col = 2 * cl + r % 2;
                double sum = C[row][col];
                for (unsigned k = 0; k < 16; k++)
                    sum += A[row][k] * B[k][col];
                const float out = (float)sum;
                memcpy(&f[6 + r], &out, sizeof out);
            }
        }
    }
    for (int i = 0; i < 4; i++)
        memcpy(&d[i], &mine[6 + i], sizeof d[i]);
    if (readers == 32)
        readers = 0;
    sy_emu_syncwarp();
}

#if SY_EMU_STACK_SWITCH
/* A fiber's first switch in pops six zero registers and "returns" into fiber_entry, whose frame
 * then sits as if called: the slot above it is its return address (none), 16-byte aligned. */
static void add_fiber()
{
    fiber &f = fibers.emplace_back();
    f.stack.resize(STACK_BYTES);
    void **sp = (void **)((uintptr_t)(f.stack.data() + f.stack.size()) & ~(uintptr_t)15);
    *--sp = nullptr;
    *--sp = (void *)fiber_entry;
    for (int i = 0; i < 6; i++)
        *--sp = nullptr;
    f.sp = sp;
}
#else
/* No local lives across getcontext, which returns twice. */
static void add_fiber()
{
    fibers.emplace_back();
    fibers.back().stack.resize(STACK_BYTES);
    getcontext(&fibers.back().context);
    ucontext_t &c = fibers.back().context;
    c.uc_stack.ss_sp = fibers.back().stack.data();
    c.uc_stack.ss_size = STACK_BYTES;
    c.uc_link = nullptr;
    makecontext(&c, fiber_entry, 0);
}
#endif

void *sy_emu_dynamic_shared(void)
{
    return dynamic_shared.data();
}

void sy_emu::run(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()> &body)
{
    const unsigned n = block.x * block.y * block.z;
    while (fibers.size() < n)
        add_fiber();
    if (exchange.size() < n) {
        mma_readers.resize((n + 31) / 32);
        exchange.resize(n);
        exchange_row.resize(n);
        exchange_frag.resize((size_t)n * FRAG);
    }
    dynamic_shared.assign(shared_bytes + 16, 0xFF);
    kernel_body = &body;
    sy_emu_block_dim = block;
    sy_emu_grid_dim = grid;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                sy_emu_block_idx = dim3(x, y, z);
                for (unsigned t = 0; t < n; t++)
                    fibers[t].state = RUNNABLE;
                for (;;) {
                    for (unsigned t = 0; t < n; t++) {
                        if (fibers[t].state != RUNNABLE)
                            continue;
                        current = t;
                        sy_emu_thread_idx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                        resume_current();
                    }
                    /* Warps whose lanes all wait at a warp barrier go on first. */
                    bool released = false;
                    for (unsigned w0 = 0; w0 < n; w0 += SY_EMU_WARP_SIZE) {
                        const unsigned w1 = w0 + SY_EMU_WARP_SIZE < n ? w0 + SY_EMU_WARP_SIZE : n;
                        unsigned at = 0, left = 0;
                        for (unsigned t = w0; t < w1; t++) {
                            at += fibers[t].state == AT_WARP_BARRIER;
                            left += fibers[t].state == DONE;
                        }
                        if (at && at + (LANES_MAY_LEAVE ? left : 0) == w1 - w0) {
                            for (unsigned t = w0; t < w1; t++)
                                if (fibers[t].state == AT_WARP_BARRIER)
                                    fibers[t].state = RUNNABLE;
                            released = true;
                        }
                    }
                    if (released)
                        continue;
                    unsigned done = 0, waiting = 0;
                    for (unsigned t = 0; t < n; t++) {
                        done += fibers[t].state == DONE;
                        waiting += fibers[t].state == AT_BARRIER;
                    }
                    if (done == n)
                        break;
                    if (done || waiting != n) {
                        fprintf(stderr, "emulator: block (%u, %u, %u): %u threads left the kernel and %u wait at a "
                                        "block barrier while %u wait at a warp barrier\n", x, y, z, done, waiting,
                                n - done - waiting);
                        abort();
                    }
                    for (unsigned t = 0; t < n; t++)
                        fibers[t].state = RUNNABLE;
                }
            }
}
