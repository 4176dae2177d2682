/* Both sides of a comparison run the same synthetic weights on the same prompt tokens: the keys
 * that decide them must agree. */
#include <string.h>

#include "ab/ab.h"
#include "util/strbuf.h"

/* The workload keys that fix the prompt tokens, the context and the shape of the generated output
 * (a synthetic context's seeded K/V are not a prefill's, and it computes other positions). The chunk
 * size, warm-up and repetitions may differ: rows are matched by position, and the comparison runs
 * its own repetitions. */
static const char *const workload_identity_keys[] = {"workload.batch", "workload.input_len", "workload.output_len",
                                                     "workload.seed", "workload.context", NULL};

int sy_ab_is_identity_key(const char *key)
{
    /* model.dtype is an engine choice (the activations' type), and model.preset only names where
     * the dimensions' defaults came from: the dimensions themselves are compared. */
    if (strncmp(key, "model.", 6) == 0)
        return strcmp(key, "model.dtype") != 0 && strcmp(key, "model.preset") != 0;
    for (size_t i = 0; workload_identity_keys[i]; i++)
        if (strcmp(key, workload_identity_keys[i]) == 0)
            return 1;
    return 0;
}

sy_status sy_ab_check_same_inputs(const sy_config *a, const sy_config *b, sy_error *err)
{
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        if (!sy_ab_is_identity_key(key) || strcmp(sy_config_text(a, key), sy_config_text(b, key)) == 0)
            continue;
        return sy_fail(err, SY_E_INVALID,
                       "%s differs: A has %s (%s), B has %s (%s); both sides must run the same weights on the same "
                       "prompt tokens, so set it equal on both or leave it out of B",
                       key, sy_config_text(a, key), sy_config_source(a, key), sy_config_text(b, key),
                       sy_config_source(b, key));
    }
    return SY_OK;
}
