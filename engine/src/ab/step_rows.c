#include "ab/step_rows.h"

#include <string.h>

void sy_ab_shape_of(const sy_plan *p, sy_ab_shape *s)
{
    memset(s, 0, sizeof *s);
    s->batch = p->batch;
    s->input_len = p->input_len;
    s->output_len = p->output_len;
    if (p->synthetic_context) {
        s->chunk = 1;
        s->prefill_steps = 0;
        s->steps = p->output_len;
        s->first_pos = p->input_len;
        s->positions = p->output_len;
        s->first_fed = p->input_len + 1;
        return;
    }
    /* workload.prefill_chunk: 0, or one at least the prompt, is the whole prompt in one step. */
    s->chunk = p->prefill_chunk && p->prefill_chunk < p->input_len ? p->prefill_chunk : p->input_len;
    s->prefill_steps = (p->input_len + s->chunk - 1) / s->chunk;
    s->steps = s->prefill_steps + (p->output_len > 1 ? p->output_len - 1 : 0);
    s->positions = p->input_len + (p->output_len > 1 ? p->output_len - 1 : 0);
    s->first_fed = p->input_len;
}

int sy_ab_step_of(const sy_ab_shape *s, uint32_t step, sy_ab_step *out)
{
    if (step >= s->steps)
        return 0;
    if (step < s->prefill_steps) {
        out->first = step * s->chunk;
        out->len = s->input_len - out->first < s->chunk ? s->input_len - out->first : s->chunk;
    } else {
        /* Decode step j (0-based) computes position input_len + j: after a prefill it is fed generated
         * token j, after a synthetic context token j - 1 (step 0 the seeded token at input_len). */
        out->first = s->input_len + (step - s->prefill_steps);
        out->len = 1;
    }
    return 1;
}
