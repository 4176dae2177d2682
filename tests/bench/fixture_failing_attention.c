/* An attention plugin named attn_paged that declares everything and fails every call, as a kernel
 * whose launch the device rejects would: the bench must report the case as error with the
 * plugin's message and exit 1, after the warm-up's first call. */
#include <stdio.h>

#include "fixture_plugin.h"

static sy_status fail(sy_error *err)
{
    snprintf(err->msg, sizeof err->msg, "fixture: planted launch failure");
    return SY_E_BACKEND;
}

static sy_status decode(void *ctx, sy_stream stream, const sy_attn_decode_args *a, sy_error *err)
{
    (void)ctx, (void)stream, (void)a;
    return fail(err);
}

static sy_status prefill(void *ctx, sy_stream stream, const sy_attn_prefill_args *a, sy_error *err)
{
    (void)ctx, (void)stream, (void)a;
    return fail(err);
}

static const sy_attention_caps caps = CONF_ATTENTION_CAPS_ALL;
static const sy_attention_ops ops = {sizeof(sy_attention_ops), 0, decode, prefill, NULL};

CONF_FIXTURE_ENTRY(SY_KIND_ATTENTION, "attn_paged", &caps, &ops, NULL, NULL)
