/* The CPU emulator under check_kv_attn_emu (check_kv_attn_emu/vendor.h): a block's threads are
 * fibers (ucontext) run in turn up to their next barrier. A block barrier releases when every
 * thread of the block has reached it, a warp barrier (shuffles, __syncwarp and the warp-wide
 * tensor-core instructions exchange through one) when every lane of the warp has; a thread that
 * leaves the kernel while others wait at a barrier is reported (on a GPU that would hang or
 * corrupt shared memory), and so are lanes of one warp waiting at different kinds of barrier.
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
#include <ucontext.h>

#include <vector>

#include "vendor.h"

#include "sy_numeric.h"

dim3 sy_emu_thread_idx, sy_emu_block_idx, sy_emu_block_dim, sy_emu_grid_dim;

namespace {
enum { RUNNABLE, AT_BARRIER, AT_WARP_BARRIER, DONE };
enum { STACK_BYTES = 256 * 1024 };

struct fiber {
    ucontext_t context;
    int state;
};

std::vector<fiber> fibers;
std::vector<char> stacks;
std::vector<float> exchange;
/* What the lanes of a warp hand each other for ldmatrix and mma. */
std::vector<const void *> exchange_row;
std::vector<uint32_t> exchange_frag; /* FRAG words a thread */
enum { FRAG = 10 };
std::vector<unsigned char> dynamic_shared;
ucontext_t scheduler;
unsigned current;
const std::function<void()> *kernel_body;

void fiber_entry()
{
    (*kernel_body)();
    fibers[current].state = DONE;
    swapcontext(&fibers[current].context, &scheduler);
}
} // namespace

void sy_emu_syncthreads(void)
{
    fibers[current].state = AT_BARRIER;
    swapcontext(&fibers[current].context, &scheduler);
}

void sy_emu_syncwarp(void)
{
    fibers[current].state = AT_WARP_BARRIER;
    swapcontext(&fibers[current].context, &scheduler);
}

float sy_emu_shfl_xor(float value, int lane_mask)
{
    const unsigned me = current;
    exchange[me] = value;
    sy_emu_syncwarp();
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
    const unsigned me = current, lane = me % 32, warp0 = me - lane, g = lane / 4, c = lane % 4;
    uint32_t *mine = &exchange_frag[(size_t)me * FRAG];
    for (int i = 0; i < 4; i++)
        mine[i] = a[i];
    mine[4] = b0;
    mine[5] = b1;
    sy_emu_syncwarp();
    /* A (16 x 16): lane 4g'+c' holds rows g', g'+8 at columns 2c', 2c'+1 (registers 0, 1) and
     * 2c'+8, 2c'+9 (2, 3); B (16 x 8): k-rows 2c', 2c'+1 (register 0) and 2c'+8, 2c'+9 (1) of
     * column g'. This lane's outputs: rows g, g+8 at columns 2c, 2c+1. */
    double A[16][16], B[16][8];
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
    }
    for (unsigned r = 0; r < 4; r++) {
        const unsigned row = g + 8 * (r / 2), col = 2 * c + r % 2;
        double sum = d[r];
        for (unsigned k = 0; k < 16; k++)
            sum += A[row][k] * B[k][col];
        d[r] = (float)sum;
    }
    sy_emu_syncwarp();
}

void *sy_emu_dynamic_shared(void)
{
    return dynamic_shared.data();
}

void sy_emu::run(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()> &body)
{
    const unsigned n = block.x * block.y * block.z;
    if (fibers.size() < n) {
        fibers.resize(n);
        stacks.resize((size_t)n * STACK_BYTES);
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
                for (unsigned t = 0; t < n; t++) {
                    getcontext(&fibers[t].context);
                    fibers[t].context.uc_stack.ss_sp = &stacks[(size_t)t * STACK_BYTES];
                    fibers[t].context.uc_stack.ss_size = STACK_BYTES;
                    fibers[t].context.uc_link = &scheduler;
                    makecontext(&fibers[t].context, fiber_entry, 0);
                    fibers[t].state = RUNNABLE;
                }
                for (;;) {
                    for (unsigned t = 0; t < n; t++) {
                        if (fibers[t].state != RUNNABLE)
                            continue;
                        current = t;
                        sy_emu_thread_idx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                        swapcontext(&scheduler, &fibers[t].context);
                    }
                    /* Warps whose lanes all wait at a warp barrier go on first. */
                    bool released = false;
                    for (unsigned w0 = 0; w0 < n; w0 += SY_EMU_WARP_SIZE) {
                        const unsigned w1 = w0 + SY_EMU_WARP_SIZE < n ? w0 + SY_EMU_WARP_SIZE : n;
                        unsigned at = 0;
                        for (unsigned t = w0; t < w1; t++)
                            at += fibers[t].state == AT_WARP_BARRIER;
                        if (at == w1 - w0) {
                            for (unsigned t = w0; t < w1; t++)
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
