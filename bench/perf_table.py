#!/usr/bin/env python3
"""Writes the results table of docs/performance.md: one row per target of issue 11 (per KV or MoE
layout where one applies) with Switchyard's number, the peer's number, the ratio the target asks
for and whether it is met.

Inputs, each optional (a target whose input is missing gets a "not measured" row):
  --kernels FILE   `switchyard bench --json FILE` (benchmark "kernels")
  --kernels-update FILE
                   a later `switchyard bench --case ... --json FILE`: its cases replace the
                   same-named ones of --kernels (the copy bandwidth stays --kernels'); repeatable
  --peers FILE     bench/peers/torch_peers.py --output FILE (benchmark "torch_peers")
  --step FILE      `switchyard run --json` of a gpt-oss-120b decode measurement; repeat for the
                   layout and fuse_pad variants
Only the text between <!-- results:begin --> and <!-- results:end --> is replaced; a document
without the markers gets them appended, a missing document is created with a title and them.

Usage: perf_table.py [--kernels FILE] [--kernels-update FILE]... [--peers FILE] [--step FILE]... [--doc PATH]
                     [--print]
Exit status: 0 written, 1 the document's markers are broken, 2 usage error."""

import argparse
import json
import os
import sys
from collections import namedtuple

BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOC = os.path.join(REPO, "docs", "performance.md")

KV_LAYOUTS = ("nhd", "vectorized_5d")
MOE_LAYOUTS = ("interleave", "separated")

# A target: `ours` names a Switchyard case ({layout} filled in per layout); `ref` the cases it is
# compared with, as (source, name) with source "kernels" or "peers" (several are summed in time).
# kind says what is measured:
#   speedup      reference time / our time (same work on both sides: a rate ratio too)
#   time_ratio   our time / reference time
#   added_share  (our time - reference time) / our time: the share of our call the reference lacks
#   rate         our `field` / the reference's `field` (TFLOPs or GBps: for work that differs)
#   copy_share   our GB/s / the copy bandwidth measured in the same bench run
#   byte_floor   our time / (our bytes over the copy bandwidth)
#   absolute_us  our time in us (the reference is shown for orientation)
#   step_floor   decode step TPOT / (weights + KV bytes over the copy bandwidth)
# op and threshold give what counts as met; show is the rate printed next to our time.
Target = namedtuple("Target", "text layouts ours ref ref_label kind op threshold field show percent")


def target(text, ours=None, ref=(), ref_label="", kind="speedup", op=">=", threshold=1.0, layouts=None,
           field=None, show=None, percent=False):
    return Target(text, layouts, ours, tuple(ref), ref_label, kind, op, threshold, field, show, percent)


def _prefill_targets():
    rows = []
    for batch, length in ((1, 8192), (8, 2048)):
        for window, label in (("nowindow", "window off"), ("window128", "window 128")):
            ours = "prefill.B%d.L%d.%s" % (batch, length, window)
            shape = "B%d.L%d" % (batch, length)
            rows.append(target("Prefill %d x %d (causal, sinks, %s): at least 0.9x the FLOP rate of the best "
                               "backend PyTorch's SDPA picks" % (batch, length, label),
                               ours, [("peers", "torch.prefill_best." + shape)], "SDPA best backend",
                               kind="rate", field="TFLOPs", threshold=0.9, show="TFLOPs"))
            rows.append(target("Prefill %d x %d (causal, sinks, %s): faster than SDPA's flash backend"
                               % (batch, length, label),
                               ours, [("peers", "torch.prefill_flash." + shape)], "SDPA flash",
                               kind="rate", field="TFLOPs", op=">", threshold=1.0, show="TFLOPs"))
    return rows


TARGETS = [
    target("Decode 128 x 8192, bf16 KV: KV read rate at least 90% of PyTorch SDPA (enable_gqa) on the same "
           "K/V laid out contiguously", "decode.{layout}.bf16.B128.ctx8192",
           [("peers", "torch.sdpa_contiguous.B128.ctx8192")], "SDPA, contiguous K/V",
           threshold=0.9, layouts=KV_LAYOUTS, show="GBps"),
    target("Decode 128 x 8192, bf16 KV: at least 2.5x faster than the paged PyTorch peer (pages gathered by "
           "indexing, then SDPA)", "decode.{layout}.bf16.B128.ctx8192",
           [("peers", "torch.sdpa_paged_gather.B128.ctx8192")], "gather + SDPA",
           threshold=2.5, layouts=KV_LAYOUTS, show="GBps"),
    target("Decode 128 x 1024, bf16 KV: at least SDPA's KV read rate on contiguous K/V",
           "decode.{layout}.bf16.B128.ctx1024", [("peers", "torch.sdpa_contiguous.B128.ctx1024")],
           "SDPA, contiguous K/V", threshold=1.0, layouts=KV_LAYOUTS, show="GBps"),
    target("Decode 1 x 32768 (split-K), bf16 KV: at least 2x SDPA's KV read rate",
           "decode.{layout}.bf16.B1.ctx32768", [("peers", "torch.sdpa_contiguous.B1.ctx32768")],
           "SDPA, contiguous K/V", threshold=2.0, layouts=KV_LAYOUTS, show="GBps"),
    target("Decode 128 x 8192: fp8 KV at least 1.7x faster than bf16 KV", "decode.{layout}.fp8.B128.ctx8192",
           [("kernels", "decode.{layout}.bf16.B128.ctx8192")], "Switchyard, bf16 KV",
           threshold=1.7, layouts=KV_LAYOUTS, show="GBps"),
    target("Decode 128 x 8192, window-128 layer: under 20 us", "decode.{layout}.bf16.B128.ctx8192.window128",
           [("peers", "torch.sdpa_last128.B128.ctx8192")], "SDPA on the last 128 keys",
           kind="absolute_us", op="<", threshold=20.0, layouts=KV_LAYOUTS),
] + _prefill_targets() + [
    target("Extend, 4096-token prefix + 512-token chunk: the KV gather costs under 10% of the call",
           "extend.{layout}.gather.prefix4096.chunk512", [("kernels", "extend.{layout}.total.prefix4096.chunk512")],
           "the whole call", kind="time_ratio", op="<", threshold=0.10, layouts=KV_LAYOUTS, percent=True),
    target("Extend, 4096-token prefix + 512-token chunk, read from the pages (attention.prefill_paged, no gather): "
           "reading K/V from the pool costs under 10% of the call", "extend.{layout}.paged.prefix4096.chunk512",
           [("kernels", "extend.{layout}.prefill.prefix4096.chunk512")], "prefill_linear over contiguous K/V",
           kind="added_share", op="<", threshold=0.10, layouts=KV_LAYOUTS, percent=True),
    target("KV write of 16384 prefill tokens: at least 75% of copy bandwidth", "kv_write.{layout}.T16384",
           kind="copy_share", threshold=0.75, layouts=KV_LAYOUTS, show="GBps", percent=True),
    target("KV write of 16384 prefill tokens: at least 4x faster than PyTorch index_put into an NHD pool",
           "kv_write.{layout}.T16384", [("peers", "torch.index_put_nhd.T16384")], "index_put_",
           threshold=4.0, layouts=KV_LAYOUTS),
    target("Fused rope + KV write (16384 tokens): faster than rope then KV write", "rope_kv_write.{layout}.T16384",
           [("kernels", "rope.T16384"), ("kernels", "kv_write.{layout}.T16384")], "rope + KV write",
           op=">", threshold=1.0, layouts=KV_LAYOUTS),
    target("add + RMSNorm + pad, 16384 x 2880 -> 3072: at least 80% of copy bandwidth",
           "norm.add_rmsnorm_pad.M16384.N2880.P3072", kind="copy_share", threshold=0.80, show="GBps", percent=True),
    target("add + RMSNorm + pad, 16384 x 2880 -> 3072: at least 2.5x faster than PyTorch (add, rms_norm, pad)",
           "norm.add_rmsnorm_pad.M16384.N2880.P3072", [("peers", "torch.add_rmsnorm_pad.M16384.N2880.P3072")],
           "PyTorch add, rms_norm, pad", threshold=2.5),
    target("add + RMSNorm + pad, 128 rows: under 8 us", "norm.add_rmsnorm_pad.M128.N2880.P3072",
           [("peers", "torch.add_rmsnorm_pad.M128.N2880.P3072")], "PyTorch add, rms_norm, pad",
           kind="absolute_us", op="<", threshold=8.0),
    target("MoE MXFP4, 128 tokens top-4 of 128 experts: within 1.4x of its weight bytes over copy bandwidth",
           "moe.{layout}.T128.E128.k4", kind="byte_floor", op="<=", threshold=1.4, layouts=MOE_LAYOUTS,
           show="GBps"),
    target("MoE MXFP4, 128 tokens top-4 of 128 experts: at least 4x faster than PyTorch bf16 torch._grouped_mm "
           "on dequantized weights", "moe.{layout}.T128.E128.k4", [("peers", "torch.grouped_mm_bf16.T128.E128.k4")],
           "grouped_mm bf16", threshold=4.0, layouts=MOE_LAYOUTS),
    target("MoE MXFP4, 8192 tokens top-4: no slower than 1.3x the PyTorch bf16 grouped_mm peer",
           "moe.{layout}.T8192.E128.k4", [("peers", "torch.grouped_mm_bf16.T8192.E128.k4")], "grouped_mm bf16",
           kind="time_ratio", op="<=", threshold=1.3, layouts=MOE_LAYOUTS),
    target("gpt-oss-120b decode step, batch 128, 8192-token contexts: TPOT within 1.3x of the step's byte floor "
           "(all weights plus all KV read, over copy bandwidth)", kind="step_floor", op="<=", threshold=1.3,
           layouts=KV_LAYOUTS),
]

STEP_BATCH = 128
STEP_CONTEXT = 8192

OPS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}
OP_TEXT = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}


# ---------------------------------------------------------------------------------------------
# Inputs.

def load_json(path, what, warnings):
    """The parsed file, or None with a warning: a missing or broken input is a gap, not a crash."""
    if not path:
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        warnings.append("%s %s not read: %s" % (what, path, exc))
        return None


class Source:
    """The cases of one bench JSON by name."""

    def __init__(self, label, doc):
        self.label = label
        self.doc = doc
        self.cases = {}
        if doc:
            for c in doc.get("cases") or []:
                if isinstance(c, dict) and "name" in c:
                    self.cases[c["name"]] = c

    def find(self, name):
        """(case, None) for a usable measurement, else (None, why not)."""
        if not self.doc:
            return None, "no %s JSON" % self.label
        c = self.cases.get(name)
        if c is None:
            return None, "%s not in the %s JSON" % (name, self.label)
        if c.get("status") != "ok":
            reason = c.get("reason")
            return None, "%s: %s%s" % (name, c.get("status", "no status"), " (%s)" % reason if reason else "")
        if not _positive(c.get("median_us")):
            return None, "%s: no median time" % name
        return c, None

    def update(self, other):
        """Takes other's usable cases in place of the same-named ones: a later run of a few cases
        (after a kernel changed) without re-running the rest. The copy bandwidth stays this run's."""
        taken = []
        for name, c in other.cases.items():
            if name != "copy.d2d" and other.find(name)[0] is not None:
                self.cases[name] = c
                taken.append(name)
        return taken

    def copy_gbps(self):
        if not self.doc:
            return None
        copy = self.doc.get("copy") or {}
        if _positive(copy.get("GBps")):
            return float(copy["GBps"])
        for name in ("copy.d2d", "torch.copy.d2d"):
            c, _ = self.find(name)
            if c and _positive(c.get("GBps")):
                return float(c["GBps"])
        return None


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


# ---------------------------------------------------------------------------------------------
# gpt-oss decode step byte floor (from the run's resolved config).

def _int(resolved, key):
    entry = resolved.get(key)
    value = entry.get("value") if isinstance(entry, dict) else entry
    return int(float(value))


def _str(resolved, key, default=""):
    entry = resolved.get(key)
    value = entry.get("value") if isinstance(entry, dict) else entry
    return default if value is None else str(value)


def step_byte_floor(resolved):
    """(weight bytes, KV bytes) one decode step must read, in the checkpoint's formats.

    Per layer: attention q/k/v/o weights and biases bf16, sinks and the two norms bf16, the router
    bf16; experts MXFP4 (17 bytes per 32 values: 16 of nibbles, 1 scale) with bf16 biases, every
    expert counted (at batch 128 with top-4 nearly all are picked). Outside the layers: the
    unembedding read whole, one embedding row per sequence, the final norm. KV: each sequence
    reads its whole context on full-attention layers and min(context, window) tokens on sliding
    ones, K and V, in the cache's dtype."""
    layers = _int(resolved, "model.layers")
    hidden = _int(resolved, "model.hidden")
    q_heads = _int(resolved, "model.q_heads")
    kv_heads = _int(resolved, "model.kv_heads")
    head_dim = _int(resolved, "model.head_dim")
    experts = _int(resolved, "model.experts")
    inter = _int(resolved, "model.intermediate")
    vocab = _int(resolved, "model.vocab")
    window = _int(resolved, "model.sliding_window")
    sliding_rule = _str(resolved, "model.sliding_layers", "even")
    batch = _int(resolved, "workload.batch")
    context = _int(resolved, "workload.input_len")
    kv_elem = 1 if _str(resolved, "kv_cache.dtype", "bf16").startswith("fp8") else 2
    bf16 = 2

    qkv_out = (q_heads + 2 * kv_heads) * head_dim
    attention = (hidden * qkv_out + qkv_out + q_heads * head_dim * hidden + hidden + q_heads) * bf16
    norms = 2 * hidden * bf16
    router = (experts * hidden + experts) * bf16
    mxfp4_per_value = 17 / 32
    expert = (2 * inter * hidden + hidden * inter) * mxfp4_per_value + (2 * inter + hidden) * bf16
    per_layer = attention + norms + router + experts * expert
    outside = vocab * hidden * bf16 + batch * hidden * bf16 + hidden * bf16
    weights = layers * per_layer + outside

    sliding = sum(1 for l in range(layers) if window > 0 and (sliding_rule == "all" or l % 2 == 0))
    full = layers - sliding
    kv_per_token = 2 * kv_heads * head_dim * kv_elem
    kv = batch * kv_per_token * (full * context + sliding * min(context, window))
    return int(weights), int(kv)


class StepRun:
    def __init__(self, path, doc):
        self.path = path
        self.doc = doc
        r = doc.get("resolved") or {}
        self.resolved = r
        self.layout = _str(r, "kv_cache.layout", "nhd")
        self.kv_dtype = _str(r, "kv_cache.dtype", "bf16")
        composition = doc.get("composition") or {}
        fused = composition.get("fuse_pad_multiple")
        self.fuse_pad = ("on (pad to %d)" % fused) if isinstance(fused, int) and fused > 0 else "off"
        # Reports before linear.fuse_qkv and bf16 activations have neither key: three linears, f32.
        # Unfused q/k/v come from one linear writing three arrays where the report says qkv_linears 1
        # (the linear plugin's split_y); reports before that key ran three linears.
        self.qkv = {True: "q/k/v one linear", False: "q/k/v three linears"}.get(composition.get("fused_qkv"))
        if composition.get("fused_qkv") is False and composition.get("qkv_linears") == 1:
            self.qkv = "q/k/v unfused, one linear into three arrays"
        self.activations = _str(r, "model.dtype", "f32")
        self.metrics = doc.get("metrics") or {}
        # Per-op timing records two events around every plugin call, which add to the step's time.
        self.per_op_events = _str(r, "report.per_op", "true").lower() in ("true", "1", "yes", "on")

    def shape(self):
        try:
            return _int(self.resolved, "workload.batch"), _int(self.resolved, "workload.input_len")
        except (KeyError, TypeError, ValueError, AttributeError):
            return None, None

    def label(self):
        text = "%s, %s KV, fuse_pad %s" % (self.layout, self.kv_dtype, self.fuse_pad)
        if self.qkv:
            text += ", " + self.qkv
        text += ", %s activations" % self.activations
        return text


# ---------------------------------------------------------------------------------------------
# Rows.

Row = namedtuple("Row", "text layout ours reference measured required result")


def fmt_us(us):
    return "%.1f us" % us if us < 10000 else "%.2f ms" % (us / 1000.0)


def fmt_rate(case, field):
    value = case.get(field)
    if not _positive(value):
        return ""
    if field == "GBps":
        return "%.2f TB/s" % (value / 1000.0) if value >= 1000 else "%.0f GB/s" % value
    return "%.0f TFLOP/s" % value


def fmt_case(case, show):
    text = fmt_us(case["median_us"])
    rate = fmt_rate(case, show) if show else ""
    return "%s (%s)" % (text, rate) if rate else text


def fmt_ratio(value, percent):
    return "%.1f%%" % (100.0 * value) if percent else "%.2fx" % value


def required_text(t):
    if t.kind == "absolute_us":
        return "%s %g us" % (OP_TEXT[t.op], t.threshold)
    return "%s %s" % (OP_TEXT[t.op], ("%g%%" % (100.0 * t.threshold)) if t.percent else "%gx" % t.threshold)


def not_measured(t, layout, why):
    return Row(t.text, layout or "-", "-", "-", "-", required_text(t), "not measured (%s)" % why)


def judged(t, layout, ours, reference, value):
    met = OPS[t.op](value, t.threshold)
    measured = fmt_us(value) if t.kind == "absolute_us" else fmt_ratio(value, t.percent)
    return Row(t.text, layout or "-", ours, reference, measured, required_text(t), "met" if met else "not met")


def kernel_row(t, layout, kernels, peers):
    sources = {"kernels": kernels, "peers": peers}
    name = t.ours.format(layout=layout)
    ours, why = kernels.find(name)
    if not ours:
        return not_measured(t, layout, why)
    refs = []
    for source, ref_name in t.ref:
        c, why = sources[source].find(ref_name.format(layout=layout))
        if not c:
            if t.kind == "absolute_us":  # the reference is only for orientation here
                refs = None
                break
            return not_measured(t, layout, why)
        refs.append(c)
    ref_us = sum(c["median_us"] for c in refs) if refs else None
    if refs and len(refs) == 1:
        reference = "%s: %s" % (t.ref_label, fmt_case(refs[0], t.field or t.show))
    elif refs:
        reference = "%s: %s" % (t.ref_label, fmt_us(ref_us))
    else:
        reference = "%s: not measured" % t.ref_label if t.ref else "-"
    our_text = fmt_case(ours, t.field or t.show)

    if t.kind == "speedup":
        return judged(t, layout, our_text, reference, ref_us / ours["median_us"])
    if t.kind == "time_ratio":
        return judged(t, layout, our_text, reference, ours["median_us"] / ref_us)
    if t.kind == "added_share":
        return judged(t, layout, our_text, reference, (ours["median_us"] - ref_us) / ours["median_us"])
    if t.kind == "absolute_us":
        return judged(t, layout, our_text, reference, ours["median_us"])
    if t.kind == "rate":
        if not _positive(ours.get(t.field)) or not _positive(refs[0].get(t.field)):
            return not_measured(t, layout, "no %s in %s or its reference" % (t.field, name))
        return judged(t, layout, our_text, reference, ours[t.field] / refs[0][t.field])
    copy = kernels.copy_gbps()
    if not copy:
        return not_measured(t, layout, "no copy bandwidth in the kernels JSON")
    copy_text = "copy: %s" % fmt_rate({"GBps": copy}, "GBps")
    if t.kind == "copy_share":
        if not _positive(ours.get("GBps")):
            return not_measured(t, layout, "%s has no GBps" % name)
        return judged(t, layout, our_text, copy_text, ours["GBps"] / copy)
    if t.kind == "byte_floor":
        if not _positive(ours.get("bytes")):
            return not_measured(t, layout, "%s has no bytes" % name)
        floor_us = ours["bytes"] / (copy * 1e3)
        return judged(t, layout, our_text, "floor %s (%.2f GB at %s)" % (fmt_us(floor_us), ours["bytes"] / 1e9,
                                                                        copy_text), ours["median_us"] / floor_us)
    raise ValueError("target kind %r is not known" % t.kind)


def step_floor_ms(run, copy_gbps):
    weights, kv = step_byte_floor(run.resolved)
    return (weights + kv) / (copy_gbps * 1e6), weights, kv


def step_rows(t, runs, copy_gbps):
    rows = []
    for layout in t.layouts:
        matching = [r for r in runs if r.layout == layout and r.shape() == (STEP_BATCH, STEP_CONTEXT)]
        if not matching:
            others = [r for r in runs if r.layout == layout]
            why = ("no %s run at batch %d with %d-token contexts%s" %
                   (layout, STEP_BATCH, STEP_CONTEXT,
                    " (given: %s)" % ", ".join("batch %s x %s" % r.shape() for r in others) if others else ""))
            rows.append(not_measured(t, layout, why))
            continue
        # The target is judged on runs without per-op events where a variant has them: the events
        # are instrumentation, not part of the step (the breakdown table shows every run).
        quiet = {r.label() for r in matching if not r.per_op_events}
        matching = [r for r in matching if not r.per_op_events or r.label() not in quiet]
        for run in matching:
            tpot = run.metrics.get("tpot_median_ms")
            if not _positive(tpot):
                rows.append(not_measured(t, run.label(), "%s has no metrics.tpot_median_ms" % run.path))
                continue
            if not copy_gbps:
                rows.append(not_measured(t, run.label(), "no copy bandwidth in the kernels or peers JSON"))
                continue
            try:
                floor, weights, kv = step_floor_ms(run, copy_gbps)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                rows.append(not_measured(t, run.label(), "%s: resolved model dimensions unreadable (%s)"
                                         % (run.path, exc)))
                continue
            reference = "byte floor %.2f ms (weights %.1f GB + KV %.1f GB at %s)" % (
                floor, weights / 1e9, kv / 1e9, fmt_rate({"GBps": copy_gbps}, "GBps"))
            rows.append(judged(t, run.label(), "TPOT %.2f ms" % tpot, reference, tpot / floor))
    return rows


def build_rows(kernels, peers, runs):
    copy = kernels.copy_gbps() or peers.copy_gbps()
    rows = []
    for t in TARGETS:
        if t.kind == "step_floor":
            rows.extend(step_rows(t, runs, copy))
        else:
            for layout in (t.layouts or (None,)):
                rows.append(kernel_row(t, layout, kernels, peers))
    return rows


# ---------------------------------------------------------------------------------------------
# Markdown.

def md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


def describe(source, path):
    doc = source.doc
    if not doc:
        return "%s: not given" % source.label
    device = doc.get("device") or {}
    parts = ["%s: `%s`" % (source.label, os.path.relpath(path, REPO) if path else "-"),
             str(doc.get("date", "undated")), str(device.get("name", "unknown device"))]
    if doc.get("torch"):
        parts.append("PyTorch %s, CUDA %s" % (doc["torch"], doc.get("cuda")))
    return ", ".join(parts)


def step_breakdown(runs):
    if not runs:
        return []
    ops = sorted({op for r in runs for op in (r.metrics.get("per_op_ms") or {})})
    header = ["run", "batch x context", "per-op events", "TPOT median", "TPOT p90"] + ["%s ms" % op for op in ops]
    rows = []
    for r in runs:
        per_op = r.metrics.get("per_op_ms") or {}
        b, c = r.shape()
        tp = r.metrics.get("tpot_median_ms")
        p90 = r.metrics.get("tpot_p90_ms")
        rows.append(["%s (`%s`)" % (r.label(), os.path.relpath(r.path, REPO)), "%s x %s" % (b, c),
                     "on" if r.per_op_events else "off",
                     "%.2f ms" % tp if _positive(tp) else "-", "%.2f ms" % p90 if _positive(p90) else "-"] +
                    ["%.2f" % per_op[op] if r.per_op_events and isinstance(per_op.get(op), (int, float)) else "-"
                     for op in ops])
    return (["", "Decode-step runs (per-op time summed over the measured run, as `switchyard run` reports it with "
             "`report.per_op` on; the target rows take a variant's runs without those events where it has them):",
             ""] + md_table(header, rows))


def render(kernels, kernels_path, peers, peers_path, runs, warnings, updates=()):
    rows = build_rows(kernels, peers, runs)
    lines = ["Generated by `bench/perf_table.py` from:", ""]
    lines += ["- " + describe(kernels, kernels_path)]
    lines += ["- %s; in place of the kernels JSON's: %s" % (describe(u, path), ", ".join(sorted(taken)))
              for u, path, taken in updates]
    lines += ["- " + describe(peers, peers_path)]
    lines += ["- step run: `%s`" % os.path.relpath(r.path, REPO) for r in runs]
    for doc, label in ((kernels.doc, "kernels"), (peers.doc, "peers")):
        if doc and (doc.get("method") or {}).get("quick"):
            warnings.append("the %s JSON comes from a --quick run: reduced shapes, not the targets' shapes" % label)
    names = {str((s.doc.get("device") or {}).get("name")) for s in (kernels, peers) if s.doc}
    if len(names) > 1:
        warnings.append("the kernels and peers JSONs name different devices: %s" % ", ".join(sorted(names)))
    lines += [""] + ["**Warning:** %s." % w for w in warnings] + ([""] if warnings else [])
    lines += md_table(["Target", "Layout", "Switchyard", "Reference", "Measured", "Required", "Result"], rows)
    counts = {k: sum(1 for r in rows if r.result.startswith(k)) for k in ("met", "not met", "not measured")}
    lines += ["", "%d met, %d not met, %d not measured." % (counts["met"], counts["not met"], counts["not measured"])]
    lines += step_breakdown(runs)
    return "\n".join(lines) + "\n", rows


def replace_between_markers(text, section):
    """text with the part between the markers replaced; markers appended when absent."""
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 and end < 0:
        sep = "" if text.endswith("\n\n") or not text else ("\n" if text.endswith("\n") else "\n\n")
        return text + sep + "## Results\n\n" + BEGIN + "\n" + section + END + "\n"
    if begin < 0 or end < 0 or end < begin or text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError("expected exactly one %s followed by one %s" % (BEGIN, END))
    return text[:begin + len(BEGIN)] + "\n" + section + text[end:]


def new_document(section):
    return ("# Performance\n\n## Results\n\n" + BEGIN + "\n" + section + END + "\n")


def write_doc(path, section):
    try:
        with open(path) as f:
            text = f.read()
        updated = replace_between_markers(text, section)
    except FileNotFoundError:
        updated = new_document(section)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(updated)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="perf_table.py", description="Write the results table of "
                                 "docs/performance.md from the bench JSON files.")
    ap.add_argument("--kernels", metavar="FILE", help="`switchyard bench --json` output")
    ap.add_argument("--kernels-update", metavar="FILE", action="append", default=[],
                    help="a later `switchyard bench --json` of some cases, which replace the same-named cases of "
                         "--kernels (repeatable, applied in order)")
    ap.add_argument("--peers", metavar="FILE", help="bench/peers/torch_peers.py output")
    ap.add_argument("--step", metavar="FILE", action="append", default=[],
                    help="`switchyard run --json` of a decode-step measurement (repeatable)")
    ap.add_argument("--doc", metavar="PATH", default=DEFAULT_DOC, help="the document (default docs/performance.md)")
    ap.add_argument("--print", dest="print_only", action="store_true",
                    help="print the section on stdout instead of writing the document")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)

    warnings = []
    kernels = Source("kernels", load_json(args.kernels, "kernels JSON", warnings))
    updates = []
    for path in args.kernels_update:
        update = Source("kernels update", load_json(path, "kernels update JSON", warnings))
        if update.doc and kernels.doc:
            updates.append((update, path, kernels.update(update)))
    peers = Source("peers", load_json(args.peers, "peers JSON", warnings))
    runs = []
    for path in args.step:
        doc = load_json(path, "step JSON", warnings)
        if isinstance(doc, dict):
            runs.append(StepRun(path, doc))
    section, _ = render(kernels, args.kernels, peers, args.peers, runs, warnings, updates)
    for w in warnings:
        sys.stderr.write("perf_table.py: warning: %s\n" % w)
    if args.print_only:
        sys.stdout.write(section)
        return 0
    try:
        write_doc(args.doc, section)
    except ValueError as exc:
        sys.stderr.write("perf_table.py: %s: %s\n" % (args.doc, exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
