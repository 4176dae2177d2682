/* The CPU emulator under the emulated GPU checks (gpu_emulator/vendor.h): a block's threads are
 * fibers (each on its own stack) run in turn up to their next barrier. A block barrier releases
 * when every thread of the block has reached it, a warp barrier (shuffles, __syncwarp and the
 * warp-wide tensor-core instructions exchange through one) when every lane of the warp has (at a warp of
 * 64, every lane that has not left the kernel: a wavefront shuffles among its active lanes; a
 * shuffle that reads a lane that left is reported); a thread that leaves the kernel while others
 * wait at a block barrier is reported (on a GPU that would hang or corrupt shared memory), and so
 * are lanes of one warp waiting at different kinds of barrier.
 * Shared memory is static storage, reused by the blocks, which run one after the other. Dynamic
 * shared memory also has shared addresses (__cvta_generic_to_shared): byte offsets from a
 * 1024-byte aligned base, as a GPU's shared window is aligned, so that the address bits a kernel
 * aligns by or a swizzle XORs are those of the GPU.
 *
 * The tensor-core instructions (warp width 32 only) are emulated from the PTX ISA's fragment
 * layouts, so that a kernel's fragment bookkeeping is checked on the CPU: ldmatrix (m8n8 .x4 of
 * 16-bit elements, plain and .trans), mma.sync m16n8k16 with bf16 inputs and f32 accumulators, and
 * Hopper's wgmma m64nNk16 (bf16, A in registers, B in 128-byte-swizzled or unswizzled K-major
 * shared memory through its descriptor), which is the m16nNk16 product of each warp's rows, done
 * as the warp's collective.
 * Products are summed in double and rounded once: the hardware's own summation order is not
 * specified, so results agree within f32 rounding. wgmma is asynchronous here as on the GPU: a
 * product is queued when issued and done at the wait_group that retires its group, reading B from
 * shared memory then and its A and accumulators from where the kernel keeps them; it reports
 * accumulators or A fragments changed while their product is in flight, a wait with products not
 * committed, and a thread that ends with products in flight. So a missing wait, a stage refilled
 * under a product, or a rescale of the accumulators before the wait fails here; what the compiler
 * does to registers across a fence (which only a GPU run shows) does not. */
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
#include <new>
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

/* A wgmma issued by a thread and not yet done: where its accumulators and A fragment are, and
 * what they held when it was issued. */
struct wgmma_in_flight {
    float *d;
    unsigned n;
    const uint32_t *a_at;
    uint32_t a[4];
    uint64_t desc;
    bool trans_b, accumulate;
    std::vector<float> d_at_issue; /* empty where another product in flight had d already */
};

struct fiber {
    std::vector<wgmma_in_flight> wgmma_open;                 /* issued since the last commit */
    std::deque<std::vector<wgmma_in_flight>> wgmma_groups; /* committed, oldest first */
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
std::vector<uint64_t> exchange;
/* What the lanes of a warp hand each other for ldmatrix, mma and wgmma. */
std::vector<const void *> exchange_row;
/* FRAG words a thread: A's fragment (0 .. 3), mma's B fragment or wgmma's descriptor (4, 5), the
 * accumulators of up to MAX_NT n-tiles, 4 words each (6 ..). */
std::vector<uint32_t> exchange_frag;
enum { MAX_NT = 32, FRAG = 6 + 4 * MAX_NT };
/* Lanes of each warp that have taken their outputs of the current product (warp_product). */
std::vector<unsigned> mma_readers;
/* A block's shared memory with a shared address: DYNAMIC_AT bytes (where a block's static
 * variables would put the dynamic part on a GPU, so that the alignment a kernel does for itself
 * is done), then the dynamic shared memory. Allocated to the byte, for AddressSanitizer. */
enum { SHARED_ALIGN = 1024, DYNAMIC_AT = 16 };
unsigned char *shared_window;
size_t shared_window_bytes;
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
        if (!fibers[current].wgmma_open.empty() || !fibers[current].wgmma_groups.empty()) {
            fprintf(stderr, "emulator: thread %u ends with wgmma products not waited for\n", current);
            abort();
        }
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

uint64_t sy_emu_shfl_xor_bits(uint64_t value, int lane_mask)
{
    const unsigned me = current;
    exchange[me] = value;
    sy_emu_syncwarp();
    if (fibers[me ^ (unsigned)lane_mask].state == DONE) {
        fprintf(stderr, "emulator: lane %u shuffles with lane %u, which has left the kernel\n", me % SY_EMU_WARP_SIZE,
                (me ^ (unsigned)lane_mask) % SY_EMU_WARP_SIZE);
        abort();
    }
    const uint64_t other = exchange[me ^ (unsigned)lane_mask];
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

/* B of a warp's product, [k][n]: filled by the first lane after the barrier, before any switch. */
static double product_b[16][8 * MAX_NT];

/* One product of a warp, the warp's collective: each lane hands over its A fragment, words w4 and
 * w5 and (accumulate) its accumulators of nt n-tiles; after the warp barrier the first lane to run
 * fills product_b (fill_b(warp0, half), which may read every lane's words) and leaves each lane its
 * outputs, D = A B (+ C), in place of its accumulators, which every lane then takes. */
template <class FillB>
static void warp_product(float *d, unsigned nt, const uint32_t a[4], uint32_t w4, uint32_t w5, bool accumulate,
                         double (*value)(uint16_t), const FillB &fill_b)
{
    const auto half = [value](uint32_t word, unsigned h) { return value((uint16_t)(h ? word >> 16 : word & 0xFFFFu)); };
    const unsigned me = current, lane = me % 32, warp0 = me - lane;
    uint32_t *mine = &exchange_frag[(size_t)me * FRAG];
    for (int i = 0; i < 4; i++)
        mine[i] = a[i];
    mine[4] = w4;
    mine[5] = w5;
    if (accumulate)
        memcpy(&mine[6], d, sizeof(float) * 4 * nt);
    sy_emu_syncwarp();
    unsigned &readers = mma_readers[warp0 / 32];
    if (readers++ == 0) {
        fill_b(warp0, half);
        /* A (16 x 16): lane 4g'+c' holds rows g', g'+8 at columns 2c', 2c'+1 (registers 0, 1) and
         * 2c'+8, 2c'+9 (2, 3); C and D (16 x 8 an n-tile): rows g', g'+8 at columns 2c', 2c'+1. */
        double A[16][16];
        for (unsigned l = 0; l < 32; l++) {
            const uint32_t *f = &exchange_frag[(size_t)(warp0 + l) * FRAG];
            const unsigned gl = l / 4, cl = l % 4;
            for (unsigned h = 0; h < 2; h++) {
                A[gl][2 * cl + h] = half(f[0], h);
                A[gl + 8][2 * cl + h] = half(f[1], h);
                A[gl][2 * cl + 8 + h] = half(f[2], h);
                A[gl + 8][2 * cl + 8 + h] = half(f[3], h);
            }
        }
        for (unsigned l = 0; l < 32; l++) {
            uint32_t *f = &exchange_frag[(size_t)(warp0 + l) * FRAG];
            const unsigned gl = l / 4, cl = l % 4;
            for (unsigned j = 0; j < nt; j++)
                for (unsigned r = 0; r < 4; r++) {
                    const unsigned row = gl + 8 * (r / 2), col = 8 * j + 2 * cl + r % 2;
                    float c = 0.0f; /* without accumulate, D = A B whatever the registers held */
                    if (accumulate)
                        memcpy(&c, &f[6 + 4 * j + r], sizeof c);
                    double sum = c;
                    for (unsigned k = 0; k < 16; k++)
                        sum += A[row][k] * product_b[k][col];
                    const float out = (float)sum;
                    memcpy(&f[6 + 4 * j + r], &out, sizeof out);
                }
        }
    }
    memcpy(d, &mine[6], sizeof(float) * 4 * nt);
    if (readers == 32)
        readers = 0;
    sy_emu_syncwarp();
}

/* mma.sync m16n8k16: B (16 x 8) from the lanes' fragments, k-rows 2c', 2c'+1 (register 0) and
 * 2c'+8, 2c'+9 (1) of column g'. */
static void emu_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, double (*value)(uint16_t))
{
    warp_product(d, 1, a, b0, b1, true, value, [](unsigned warp0, const auto &half) {
        for (unsigned l = 0; l < 32; l++) {
            const uint32_t *f = &exchange_frag[(size_t)(warp0 + l) * FRAG];
            const unsigned gl = l / 4, cl = l % 4;
            for (unsigned h = 0; h < 2; h++) {
                product_b[2 * cl + h][gl] = half(f[4], h);
                product_b[2 * cl + 8 + h][gl] = half(f[5], h);
            }
        }
    });
}

void sy_emu_mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    emu_mma(d, a, b0, b1, bf16_value);
}

void sy_emu_mma_f16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    emu_mma(d, a, b0, b1, f16_value);
}

/* B (16 x n) of a wgmma from shared memory, per its descriptor (PTX ISA, "Matrix Descriptor
 * Format" and "Shared Memory Matrix Layout"): start address, leading and stride byte offsets in
 * 16-byte units at bits 0, 16 and 32, the base offset at 49 and the swizzle mode at 62 (1: 128
 * bytes; 0: none, K-major only; the two emulated). With the 128-byte swizzle, K-major B (trans_b
 * 0) has element (k, n) at start + (n / 8) SBO + (n % 8) 128 + 2k (k within one 128-byte row; LBO
 * unused), N-major B at start + (k / 8) SBO + (k % 8) 128 + (n / 64) LBO + 2 (n % 64), and the
 * swizzle then XORs bits 4-6 of the shared address with its bits 7-9. Without swizzle, K-major B
 * is core matrices of 8 rows of 16 bytes: (k, n) at start + (n / 8) SBO + (n % 8) 16 + (k / 8)
 * LBO + 2 (k % 8). */
static void wgmma_fill_b(uint64_t desc, unsigned n, bool trans_b)
{
    const unsigned mode = (unsigned)(desc >> 62), base_offset = (unsigned)(desc >> 49) & 7u;
    if ((mode != 1 && !(mode == 0 && !trans_b)) || base_offset != 0) {
        fprintf(stderr, "emulator: wgmma descriptor 0x%016llx%s: swizzle mode %u, base offset %u (only the 128-byte "
                        "swizzle, and K-major B without swizzle, at base offset 0 are emulated)\n",
                (unsigned long long)desc, trans_b ? " (N-major)" : "", mode, base_offset);
        abort();
    }
    const size_t start = (size_t)(desc & 0x3FFFu) << 4, lbo = (size_t)(desc >> 16 & 0x3FFFu) << 4,
                 sbo = (size_t)(desc >> 32 & 0x3FFFu) << 4;
    for (unsigned k = 0; k < 16; k++)
        for (unsigned j = 0; j < n; j++) {
            size_t at;
            if (mode == 0)
                at = start + j / 8 * sbo + j % 8 * 16 + k / 8 * lbo + 2 * (k % 8);
            else {
                at = trans_b ? start + k / 8 * sbo + k % 8 * 128 + j / 64 * lbo + 2 * (j % 64)
                             : start + j / 8 * sbo + j % 8 * 128 + 2 * k;
                at ^= (at >> 7 & 7u) << 4;
            }
            if (at + 2 > shared_window_bytes) {
                fprintf(stderr, "emulator: wgmma descriptor 0x%016llx reads element (k %u, n %u) at shared address %zu, "
                                "past the %zu bytes of shared memory\n", (unsigned long long)desc, k, j, at,
                        shared_window_bytes);
                abort();
            }
            uint16_t h;
            memcpy(&h, shared_window + at, sizeof h);
            product_b[k][j] = bf16_value(h);
        }
}

static void wgmma_product(float *d, unsigned n, const uint32_t a[4], uint64_t b_desc, bool trans_b, bool accumulate)
{
    warp_product(d, n / 8, a, (uint32_t)b_desc, (uint32_t)(b_desc >> 32), accumulate, bf16_value,
                 [n, trans_b](unsigned warp0, const auto &) {
                     /* The descriptor is the warpgroup's: every lane must give the same. */
                     const uint32_t *f0 = &exchange_frag[(size_t)warp0 * FRAG];
                     for (unsigned l = 1; l < 32; l++) {
                         const uint32_t *f = &exchange_frag[(size_t)(warp0 + l) * FRAG];
                         if (f[4] != f0[4] || f[5] != f0[5]) {
                             fprintf(stderr, "emulator: wgmma: lanes 0 and %u of a warp give different descriptors\n",
                                     l);
                             abort();
                         }
                     }
                     wgmma_fill_b((uint64_t)f0[5] << 32 | f0[4], n, trans_b);
                 });
}

void sy_emu_wgmma_bf16(float *d, unsigned n, const uint32_t a[4], uint64_t b_desc, bool trans_b, bool accumulate)
{
    if (n % 8 != 0 || n < 8 || n > 8 * MAX_NT) {
        fprintf(stderr, "emulator: wgmma with n %u\n", n);
        abort();
    }
    fiber &me = fibers[current];
    bool d_in_flight = false;
    for (const wgmma_in_flight &w : me.wgmma_open)
        d_in_flight |= w.d == d;
    for (const auto &group : me.wgmma_groups)
        for (const wgmma_in_flight &w : group)
            d_in_flight |= w.d == d;
    wgmma_in_flight w = {d, n, a, {a[0], a[1], a[2], a[3]}, b_desc, trans_b, accumulate, {}};
    if (!d_in_flight)
        w.d_at_issue.assign(d, d + n / 2);
    me.wgmma_open.push_back(std::move(w));
}

void sy_emu_wgmma_commit(void)
{
    fiber &me = fibers[current];
    me.wgmma_groups.push_back(std::move(me.wgmma_open));
    me.wgmma_open.clear();
}

/* Retires the thread's committed groups but the `pending` newest, oldest first. A product's
 * accumulators must hold, when it is done, what they held at its issue or what the product before
 * it on them left: anything else is the kernel writing them while the product was in flight
 * (checked where the emulator knows either; a chain of products split across two waits is
 * checked up to the split). */
void sy_emu_wgmma_wait(int pending)
{
    fiber &me = fibers[current];
    if (!me.wgmma_open.empty()) {
        fprintf(stderr, "emulator: thread %u waits for wgmma groups with %zu products not committed\n", current,
                me.wgmma_open.size());
        abort();
    }
    /* The accumulators' expected contents, by address, for products in flight. */
    std::vector<std::pair<float *, std::vector<float>>> expected;
    const auto expected_of = [&expected](float *d) -> std::vector<float> * {
        for (auto &e : expected)
            if (e.first == d)
                return &e.second;
        return nullptr;
    };
    while (me.wgmma_groups.size() > (size_t)(pending < 0 ? 0 : pending)) {
        std::vector<wgmma_in_flight> group = std::move(me.wgmma_groups.front());
        me.wgmma_groups.pop_front();
        for (const wgmma_in_flight &w : group) {
            const size_t words = (size_t)w.n / 2;
            if (memcmp(w.a_at, w.a, sizeof w.a) != 0) {
                fprintf(stderr, "emulator: thread %u changed a wgmma's A fragment before its wait\n", current);
                abort();
            }
            const std::vector<float> *e = expected_of(w.d);
            if (!e && !w.d_at_issue.empty())
                e = &w.d_at_issue;
            if (e && memcmp(e->data(), w.d, words * sizeof(float)) != 0) {
                fprintf(stderr, "emulator: thread %u changed a wgmma's accumulators before its wait\n", current);
                abort();
            }
            wgmma_product(w.d, w.n, w.a, w.desc, w.trans_b, w.accumulate);
            std::vector<float> now(w.d, w.d + words);
            if (std::vector<float> *e = expected_of(w.d))
                *e = now;
            else
                expected.emplace_back(w.d, now);
        }
    }
}

void sy_emu_whole_warp(unsigned mask)
{
    if (mask != 0xFFFFFFFFu) {
        fprintf(stderr, "emulator: a warp intrinsic over mask 0x%08x (only whole warps are emulated)\n", mask);
        abort();
    }
}

long long sy_emu_reduce_sync(unsigned mask, long long value, bool max)
{
    sy_emu_whole_warp(mask);
    const unsigned me = current, warp0 = me - me % 32;
    memcpy(&exchange_frag[(size_t)me * FRAG], &value, sizeof value);
    sy_emu_syncwarp();
    long long r = value;
    for (unsigned l = 0; l < 32; l++) {
        long long x;
        memcpy(&x, &exchange_frag[(size_t)(warp0 + l) * FRAG], sizeof x);
        r = max ? (x > r ? x : r) : (x < r ? x : r);
    }
    sy_emu_syncwarp();
    return r;
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
    return shared_window + DYNAMIC_AT;
}

size_t sy_emu_shared_address(const void *p)
{
    const unsigned char *const at = (const unsigned char *)p;
    if (at < shared_window || at > shared_window + shared_window_bytes) {
        fprintf(stderr, "emulator: __cvta_generic_to_shared of %p, outside the dynamic shared memory (only it has a "
                        "shared address here)\n", p);
        abort();
    }
    return (size_t)(at - shared_window);
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
    if (shared_window)
        ::operator delete(shared_window, std::align_val_t(SHARED_ALIGN));
    shared_window_bytes = DYNAMIC_AT + shared_bytes + 16;
    shared_window = (unsigned char *)::operator new(shared_window_bytes, std::align_val_t(SHARED_ALIGN));
    memset(shared_window, 0xFF, shared_window_bytes);
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
