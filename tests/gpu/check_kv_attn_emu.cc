/* The CPU emulator under check_kv_attn_emu (check_kv_attn_emu/vendor.h): a block's threads are
 * fibers (ucontext) run in turn up to their next barrier; a barrier releases when every thread of
 * the block has reached it, and a thread that leaves the kernel while others wait at a barrier is
 * reported (on a GPU that would hang or corrupt shared memory). Shared memory is static storage,
 * reused by the blocks, which run one after the other. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

#include "vendor.h"

dim3 sy_emu_thread_idx, sy_emu_block_idx, sy_emu_block_dim, sy_emu_grid_dim;

namespace {
enum { RUNNABLE, AT_BARRIER, DONE };
enum { STACK_BYTES = 256 * 1024 };

struct fiber {
    ucontext_t context;
    int state;
};

std::vector<fiber> fibers;
std::vector<char> stacks;
std::vector<float> exchange;
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

float sy_emu_shfl_xor(float value, int lane_mask)
{
    const unsigned me = current;
    exchange[me] = value;
    sy_emu_syncthreads();
    const float other = exchange[me ^ (unsigned)lane_mask];
    sy_emu_syncthreads();
    return other;
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
                    unsigned done = 0, waiting = 0;
                    for (unsigned t = 0; t < n; t++) {
                        done += fibers[t].state == DONE;
                        waiting += fibers[t].state == AT_BARRIER;
                    }
                    if (done == n)
                        break;
                    if (done) {
                        fprintf(stderr, "emulator: block (%u, %u, %u): %u threads left the kernel while %u wait at a "
                                        "barrier\n", x, y, z, done, waiting);
                        abort();
                    }
                    for (unsigned t = 0; t < n; t++)
                        fibers[t].state = RUNNABLE;
                }
            }
}
