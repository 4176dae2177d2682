#!/usr/bin/env python3
"""PyTorch peers of the Switchyard kernels, measured on the same GPU at the same shapes.

Each case is what a user would write in plain PyTorch instead of calling a Switchyard plugin
(gpt-oss-120b shapes: 64 q heads, 8 KV heads, head dim 64, page 64, hidden 2880, bf16). The
results go to one JSON file that bench/perf_table.py reads next to `switchyard bench --json`.

Method: every case draws fresh random inputs (torch.randn, never zeros), runs --warmup calls,
then times --runs calls one by one with CUDA events around each call and reports the median,
p10, p90 and min. Inputs are rotated among enough copies that one run's inputs are not in L2
when it starts (the copies together are at least 4x the L2 size); a case whose inputs alone are
that large has one copy. Bytes are compulsory traffic (each input read once, each output
written once) and FLOPs count 2 per multiply-add, with the same formulas as the Switchyard
bench, so both sides' GB/s and TFLOP/s compare directly.

Usage: torch_peers.py --output FILE.json [--case TEXT] [--runs N] [--warmup N] [--quick]
                      [--seed N] [--device N] [--list]
Exit status: 0 every case ran, 1 a case failed (recorded with status "error" in the JSON, which
is still written), 2 usage error, 3 PyTorch or a CUDA device is missing.

torch is imported inside main(), so --help, --list and argument errors work without it."""

import argparse
import datetime
import gc
import json
import math
import os
import sys
import time

# gpt-oss-120b (the shapes of issue 11's targets).
Q_HEADS = 64
KV_HEADS = 8
HEAD_DIM = 64
PAGE = 64
HIDDEN = 2880
INTERMEDIATE = 2880
EXPERTS = 128
TOP_K = 4
PADDED_HIDDEN = 3072  # 2880 rounded up to the MXFP4 MoE's input alignment of 256
RMS_EPS = 1e-5
BF16 = 2  # bytes
INDEX = 4  # bytes of an int32 index (block tables and slot maps are int32 in Switchyard's ABI)

# When the copies of a case's inputs together reach this many times the L2 size, a run's inputs
# were evicted by the runs before it.
ROTATION_L2_MULTIPLE = 4
DEFAULT_L2_BYTES = 50 << 20  # used only where the device does not report its L2 size
MIN_RUNS = 50

PREFILL_BACKENDS = ("cudnn", "flash", "efficient")
NO_SINKS_NOTE = ("no sinks: SDPA has no attention-sink term (Switchyard's prefill adds one logit "
                 "per q head to the softmax denominator)")


# ---------------------------------------------------------------------------------------------
# Byte and FLOP formulas (shared with the Switchyard bench; compulsory traffic only).

def decode_bytes(batch, keys, kv_elem=BF16):
    # K and V of every key read once: 2 * B * S * Hkv * D * elem;
    # q read and the output written once: 2 * B * Hq * D * bf16.
    return 2 * batch * keys * KV_HEADS * HEAD_DIM * kv_elem + 2 * batch * Q_HEADS * HEAD_DIM * BF16


def decode_flops(batch, keys):
    # QK^T and PV: per q head and key, D multiply-adds each: 2 * 2 * B * Hq * S * D.
    return 4 * batch * Q_HEADS * keys * HEAD_DIM


def prefill_bytes(batch, length):
    # q and the output: 2 * B * L * Hq * D; K and V: 2 * B * L * Hkv * D; all bf16.
    return (2 * batch * length * Q_HEADS * HEAD_DIM + 2 * batch * length * KV_HEADS * HEAD_DIM) * BF16


def prefill_flops(batch, length):
    # QK^T and PV over all L x L pairs would be 4 * B * Hq * L * L * D; causal halves it.
    return 2 * batch * Q_HEADS * length * length * HEAD_DIM


def kv_write_bytes(tokens):
    # K and V read once and written once into the pool: 2 * 2 * T * Hkv * D * bf16,
    # plus the slot map read once: T * int32.
    return 4 * tokens * KV_HEADS * HEAD_DIM * BF16 + tokens * INDEX


def add_rmsnorm_pad_bytes(rows, width, padded):
    # x and residual read (2 * M * N), the weight read (N), the padded output written (M * P) and
    # the residual sum written (M * N); all bf16.
    return (2 * rows * width + width + rows * padded + rows * width) * BF16


def add_rmsnorm_pad_flops(rows, width):
    # Per element: the add, square-and-accumulate (one multiply-add), the two scalings.
    # Memory-bound; the count is there for completeness.
    return 5 * rows * width


def moe_expert_params():
    # gate_up [2I, H] plus down [H, I] per expert.
    return 2 * INTERMEDIATE * HIDDEN + HIDDEN * INTERMEDIATE


def grouped_mm_bytes(used_experts, pairs, hidden=HIDDEN):
    # bf16 weights of the experts selected at least once, the sorted token rows read once and the
    # expert outputs written once (pairs = tokens * k rows of hidden each).
    return used_experts * moe_expert_params() * BF16 + 2 * pairs * hidden * BF16


def grouped_mm_flops(pairs):
    # Each (token, expert) pair: gate_up 2I x H and down H x I multiply-adds.
    return 2 * pairs * moe_expert_params()


def copy_bytes(size):
    # A device-to-device copy reads and writes every byte.
    return 2 * size


# ---------------------------------------------------------------------------------------------
# The cases. Each spec: the name (or, for a prefill group, the shape suffix), the builder, the
# shape at full size and the shape with --quick (same cases, small enough for a smoke run).

def decode_spec(name, builder, batch, context, quick_batch, quick_context, **extra):
    return {"names": [name], "builder": builder,
            "full": dict(batch=batch, context=context, **extra),
            "quick": dict(batch=quick_batch, context=quick_context, **extra)}


def prefill_spec(batch, length, quick_batch, quick_length):
    suffix = "B%d.L%d" % (batch, length)
    names = ["torch.prefill_%s.%s" % (b, suffix) for b in PREFILL_BACKENDS]
    names.append("torch.prefill_best.%s" % suffix)
    return {"names": names, "builder": "prefill",
            "full": dict(batch=batch, length=length), "quick": dict(batch=quick_batch, length=quick_length)}


def single_spec(name, builder, full, quick):
    return {"names": [name], "builder": builder, "full": full, "quick": quick}


CASE_SPECS = [
    decode_spec("torch.sdpa_contiguous.B128.ctx8192", "decode_contiguous", 128, 8192, 8, 1024),
    decode_spec("torch.sdpa_contiguous.B128.ctx1024", "decode_contiguous", 128, 1024, 8, 256),
    decode_spec("torch.sdpa_contiguous.B1.ctx32768", "decode_contiguous", 1, 32768, 1, 4096),
    decode_spec("torch.sdpa_paged_gather.B128.ctx8192", "decode_paged_gather", 128, 8192, 8, 1024),
    decode_spec("torch.sdpa_last128.B128.ctx8192", "decode_last_keys", 128, 8192, 8, 1024, keys=128),
    prefill_spec(1, 8192, 1, 1024),
    prefill_spec(8, 2048, 2, 512),
    single_spec("torch.index_put_nhd.T16384", "index_put_nhd", dict(tokens=16384), dict(tokens=1024)),
    single_spec("torch.add_rmsnorm_pad.M16384.N2880.P3072", "add_rmsnorm_pad",
                dict(rows=16384, width=HIDDEN, padded=PADDED_HIDDEN),
                dict(rows=1024, width=HIDDEN, padded=PADDED_HIDDEN)),
    single_spec("torch.add_rmsnorm_pad.M128.N2880.P3072", "add_rmsnorm_pad",
                dict(rows=128, width=HIDDEN, padded=PADDED_HIDDEN),
                dict(rows=128, width=HIDDEN, padded=PADDED_HIDDEN)),
    single_spec("torch.grouped_mm_bf16.T128.E128.k4", "grouped_mm_bf16",
                dict(tokens=128, experts=EXPERTS, top_k=TOP_K), dict(tokens=16, experts=8, top_k=TOP_K)),
    single_spec("torch.grouped_mm_bf16.T8192.E128.k4", "grouped_mm_bf16",
                dict(tokens=8192, experts=EXPERTS, top_k=TOP_K), dict(tokens=256, experts=8, top_k=TOP_K)),
    single_spec("torch.copy.d2d", "copy_d2d", dict(bytes=1 << 30), dict(bytes=64 << 20)),
]


def all_case_names():
    return [n for spec in CASE_SPECS for n in spec["names"]]


def selected_specs(case_filter):
    """Specs with at least one name containing case_filter (a prefill group runs whole: its
    best-of row needs every backend)."""
    if not case_filter:
        return list(CASE_SPECS)
    return [s for s in CASE_SPECS if any(case_filter in n for n in s["names"])]


# ---------------------------------------------------------------------------------------------
# Workloads: what one timed run does, the inputs it rotates among, its bytes and FLOPs.

class Workload:
    def __init__(self, make_set, set_bytes, run, bytes_, flops, shape, note="", backend=None):
        self.make_set = make_set  # () -> the tensors of one input copy
        # Bytes one run touches, its copy's and the shared tensors': the other copies' runs in
        # between must touch enough to evict this copy (decides the rotation).
        self.set_bytes = set_bytes
        self.run = run  # (copy) -> None: the timed call
        self.bytes = bytes_  # int, or () -> int once the copies exist
        self.flops = flops
        self.shape = shape
        self.note = note
        self.backend = backend


class Peers:
    """The builders, bound to torch, one device and one seeded generator."""

    def __init__(self, torch, device, seed):
        self.t = torch
        self.F = torch.nn.functional
        self.device = device
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)

    def randn(self, *shape, scale=1.0):
        x = self.t.randn(shape, device=self.device, dtype=self.t.bfloat16, generator=self.gen)
        return x.mul_(scale) if scale != 1.0 else x

    def randperm(self, n):
        return self.t.randperm(n, device=self.device, generator=self.gen)

    # Decode: one query token per sequence over contiguous K/V [B, Hkv, S, D]. The default scale
    # 1/sqrt(D) = 0.125 is gpt-oss's.
    def decode_contiguous(self, batch, context):
        sdpa = self.F.scaled_dot_product_attention

        def make_set():
            return (self.randn(batch, Q_HEADS, 1, HEAD_DIM), self.randn(batch, KV_HEADS, context, HEAD_DIM),
                    self.randn(batch, KV_HEADS, context, HEAD_DIM))

        def run(s):
            sdpa(s[0], s[1], s[2], enable_gqa=True)

        b = decode_bytes(batch, context)
        return Workload(make_set, b, run, b, decode_flops(batch, context), dict(batch=batch, context=context))

    # Decode over pages of 64 tokens placed in a shuffled pool (page 0 is the padding page, as in
    # Switchyard's pools): gather each sequence's pages by indexing with its block table, then
    # SDPA. The gather is inside the timed call; bytes stay the compulsory ones of paged decode.
    def decode_paged_gather(self, batch, context):
        sdpa = self.F.scaled_dot_product_attention
        pages_per_seq = context // PAGE
        pool_pages = batch * pages_per_seq + 1

        def make_set():
            table = (self.randperm(pool_pages - 1) + 1).view(batch, pages_per_seq)
            return (self.randn(batch, Q_HEADS, 1, HEAD_DIM), self.randn(pool_pages, PAGE, KV_HEADS, HEAD_DIM),
                    self.randn(pool_pages, PAGE, KV_HEADS, HEAD_DIM), table)

        def run(s):
            q, k_pool, v_pool, table = s
            k = k_pool[table].view(batch, context, KV_HEADS, HEAD_DIM).transpose(1, 2)
            v = v_pool[table].view(batch, context, KV_HEADS, HEAD_DIM).transpose(1, 2)
            sdpa(q, k, v, enable_gqa=True)

        b = decode_bytes(batch, context) + batch * pages_per_seq * INDEX  # + the block table
        return Workload(make_set, b, run, b, decode_flops(batch, context),
                        dict(batch=batch, context=context, page=PAGE, pool_pages=pool_pages),
                        note="block table int64 for indexing; bytes count it as int32 like the ABI")

    # A sliding-window layer's decode: SDPA over only the last `keys` keys of each sequence
    # (contiguous [B, Hkv, keys, D]).
    def decode_last_keys(self, batch, context, keys):
        w = self.decode_contiguous(batch, keys)
        w.shape = dict(batch=batch, context=context, keys=keys)
        w.note = "contiguous K/V of the last %d keys" % keys
        return w

    def index_put_nhd(self, tokens):
        # Pool of 8x the pages the tokens fill, so that the writes land spread over far more
        # memory than L2; each input copy writes its own shuffled pages, 64 slots per page.
        pages = tokens // PAGE
        pool_pages = 8 * pages + 1
        k_pool = self.randn(pool_pages * PAGE, KV_HEADS, HEAD_DIM)
        v_pool = self.randn(pool_pages * PAGE, KV_HEADS, HEAD_DIM)
        in_page = self.t.arange(PAGE, device=self.device)

        def make_set():
            page_ids = self.randperm(pool_pages - 1)[:pages] + 1
            slots = (page_ids[:, None] * PAGE + in_page[None, :]).reshape(-1)
            return (self.randn(tokens, KV_HEADS, HEAD_DIM), self.randn(tokens, KV_HEADS, HEAD_DIM), slots)

        def run(s):
            k, v, slots = s
            k_pool.index_put_((slots,), k)
            v_pool.index_put_((slots,), v)

        b = kv_write_bytes(tokens)
        return Workload(make_set, b, run, b, 0, dict(tokens=tokens, pool_pages=pool_pages, page=PAGE),
                        note="pool.index_put_((slots,), x) for K and for V; slots int64, counted as int32")

    def add_rmsnorm_pad(self, rows, width, padded):
        weight = self.randn(width)
        F = self.F

        def make_set():
            return (self.randn(rows, width), self.randn(rows, width))

        def run(s):
            summed = s[0] + s[1]  # the residual output
            F.pad(F.rms_norm(summed, (width,), weight, RMS_EPS), (0, padded - width))

        b = add_rmsnorm_pad_bytes(rows, width, padded)
        return Workload(make_set, b, run, b, add_rmsnorm_pad_flops(rows, width),
                        dict(rows=rows, width=width, padded=padded),
                        note="x + residual, F.rms_norm(eps=%g, weight), F.pad to %d" % (RMS_EPS, padded))

    def grouped_mm_bf16(self, tokens, experts, top_k):
        t = self.t
        # Dequantized expert weights, [E, out, in] as a checkpoint stores them; the scale keeps the
        # activations in the range where gpt-oss's clamps matter.
        w13 = self.randn(experts, 2 * INTERMEDIATE, HIDDEN, scale=0.02)
        w2 = self.randn(experts, HIDDEN, INTERMEDIATE, scale=0.02)
        w13_t = w13.transpose(-2, -1)  # [E, K, N] column-major: what _grouped_mm's mat_b expects
        w2_t = w2.transpose(-2, -1)
        pairs = tokens * top_k
        used_per_set = []

        def make_set():
            # Each token picks top_k distinct experts; rows sorted by expert, offs = group ends.
            ids = t.rand(tokens, experts, device=self.device, generator=self.gen).topk(top_k, dim=1).indices
            flat = ids.reshape(-1)
            order = flat.argsort(stable=True)
            counts = t.bincount(flat, minlength=experts)
            used_per_set.append(int((counts > 0).sum().item()))
            x = self.randn(tokens, HIDDEN)
            return (x[order // top_k].contiguous(), counts.cumsum(0).to(t.int32))

        def run(s):
            rows, offs = s
            h = t._grouped_mm(rows, w13_t, offs=offs)
            # gpt-oss's SwiGLU: gate/up interleaved by row in the checkpoint; gate clamped above at 7,
            # up to [-7, 7]; a = g * sigmoid(1.702 g) * (u + 1).
            gate = h[:, 0::2].clamp(max=7.0)
            up = h[:, 1::2].clamp(-7.0, 7.0)
            act = gate * t.sigmoid(1.702 * gate) * (up + 1.0)
            t._grouped_mm(act, w2_t, offs=offs)

        set_bytes = experts * moe_expert_params() * BF16 + 2 * pairs * HIDDEN * BF16
        return Workload(make_set, set_bytes, run,
                        lambda: round(sum(grouped_mm_bytes(u, pairs) for u in used_per_set) / len(used_per_set)),
                        grouped_mm_flops(pairs), dict(tokens=tokens, experts=experts, top_k=top_k,
                                                      hidden=HIDDEN, intermediate=INTERMEDIATE),
                        note="times both grouped GEMMs (torch._grouped_mm) and the SwiGLU between them; "
                             "routing, the sort by expert, the gather of rows and the weighted sum over k "
                             "are outside the timed call; weights bf16 (dequantized ahead of time), no biases")

    def copy_d2d(self, bytes):
        elems = bytes // BF16

        def make_set():
            return (self.randn(elems), self.t.empty(elems, device=self.device, dtype=self.t.bfloat16))

        def run(s):
            s[1].copy_(s[0])

        b = copy_bytes(elems * BF16)
        return Workload(make_set, b, run, b, 0, dict(bytes=elems * BF16), note="bandwidth counts read + write")


# ---------------------------------------------------------------------------------------------
# Timing.

def percentile(sorted_values, q):
    """Linear interpolation between the closest ranks (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def rotation_count(set_bytes, l2_bytes):
    target = ROTATION_L2_MULTIPLE * l2_bytes
    if set_bytes >= target:
        return 1
    return min(1024, -(-target // max(set_bytes, 1)))


def head_start(torch, host_us_per_call, runs):
    """Device work queued ahead of the timed runs (memsets of a 64 MiB scratch buffer) long enough
    for the host to enqueue every timed run before the device reaches the first, as the Switchyard
    bench does (engine/src/bench/timing.c): a run shorter than the host's own time per run would
    otherwise find the device idle at its start event and time the host. Returns the scratch
    buffer, to be kept until the runs are done."""
    scratch = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    scratch.zero_()
    end.record()
    end.synchronize()
    memset_us = max(start.elapsed_time(end) * 1e3, 1.0)
    need_us = 1.25 * host_us_per_call * runs + 20.0
    for _ in range(min(512, int(-(-need_us // memset_us)))):
        scratch.zero_()
    return scratch


def time_runs(torch, run, sets, warmup, runs):
    """Per-run times in microseconds, each between two CUDA events on the current stream, after a
    head start (see head_start); the host's time per run is measured on the warm-up runs after
    the first, plus 2 us for the two event records of a timed run."""
    after_first = None
    for i in range(warmup):
        run(sets[i % len(sets)])
        if i == 0:
            after_first = time.perf_counter()
    host_us = (time.perf_counter() - after_first) * 1e6 / (warmup - 1) + 2.0 if warmup > 1 else 20.0
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    scratch = head_start(torch, host_us, runs)
    for i, (start, end) in enumerate(events):
        inputs = sets[(warmup + i) % len(sets)]
        start.record()
        run(inputs)
        end.record()
    torch.cuda.synchronize()
    del scratch
    return sorted(start.elapsed_time(end) * 1e3 for start, end in events)


def summary(name, times_us, bytes_, flops, shape, backend, note, n_sets):
    median = percentile(times_us, 0.5)
    return {"name": name, "status": "ok", "reason": None, "median_us": median,
            "p10_us": percentile(times_us, 0.1), "p90_us": percentile(times_us, 0.9), "min_us": times_us[0],
            "runs": len(times_us), "bytes": bytes_, "flops": flops,
            "GBps": bytes_ / median / 1e3, "TFLOPs": (flops / median / 1e6) if flops else None,
            "backend": backend, "note": note, "shape": shape, "input_copies": n_sets}


def error_case(name, reason, backend=None, note=None):
    return {"name": name, "status": "error", "reason": reason, "median_us": None, "p10_us": None,
            "p90_us": None, "min_us": None, "runs": 0, "bytes": None, "flops": None, "GBps": None,
            "TFLOPs": None, "backend": backend, "note": note}


class BackendRefused(Exception):
    """An SDPA backend's refusal, its message already one line with the reasons PyTorch warned."""


def one_line(exc):
    if isinstance(exc, BackendRefused):
        return str(exc)
    text = "%s: %s" % (type(exc).__name__, str(exc).strip())
    first = text.splitlines()[0] if text else type(exc).__name__
    return first[:400]


def kernel_names(torch, call):
    """Names of the CUDA kernels one call launches (which SDPA backend the default dispatch took)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    names = {e.name for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")}
    return sorted(n[:80] for n in names)


def backend_from_kernels(names):
    joined = " ".join(names).lower()
    for key, backend in (("cudnn", "cudnn"), ("flash", "flash"), ("fmha", "efficient"),
                         ("mem_eff", "efficient"), ("cutlass", "efficient")):
        if key in joined:
            return backend
    return "default"


# ---------------------------------------------------------------------------------------------
# Running the cases.

class Runner:
    def __init__(self, torch, args, l2_bytes):
        self.t = torch
        self.args = args
        self.l2_bytes = l2_bytes
        self.peers = Peers(torch, torch.device("cuda", args.device), args.seed)

    def free(self):
        gc.collect()
        self.t.cuda.empty_cache()

    def make_sets(self, workload):
        n = rotation_count(workload.set_bytes, self.l2_bytes)
        return [workload.make_set() for _ in range(n)]

    def resolve(self, value):
        return value() if callable(value) else value

    def run_spec(self, spec):
        """The results of one spec; its tensors are released before the next spec allocates."""
        try:
            return self.measure_spec(spec)
        finally:
            self.free()

    def measure_spec(self, spec):
        shape = spec["quick" if self.args.quick else "full"]
        if spec["builder"] == "prefill":
            try:
                return self.run_prefill(spec["names"], **shape)
            except Exception as exc:  # e.g. no torch.nn.attention in this PyTorch
                return [error_case(n, one_line(exc), note=NO_SINKS_NOTE) for n in spec["names"]]
        name = spec["names"][0]
        try:
            w = getattr(self.peers, spec["builder"])(**shape)
            sets = self.make_sets(w)
            times = time_runs(self.t, w.run, sets, self.args.warmup, self.args.runs)
            backend, note = w.backend, w.note
            if spec["builder"].startswith("decode_"):
                backend, note = self.decode_backend(w, sets[0], note)
            return [summary(name, times, self.resolve(w.bytes), self.resolve(w.flops), w.shape, backend, note,
                            len(sets))]
        except Exception as exc:  # a failed case is recorded and the others still run
            return [error_case(name, one_line(exc))]

    def decode_backend(self, workload, inputs, note):
        try:
            names = kernel_names(self.t, lambda: workload.run(inputs))
        except Exception as exc:
            return "default", "; ".join(x for x in (note, "kernels not recorded: " + one_line(exc)) if x)
        seen = "kernels: " + ", ".join(names) if names else "kernels: none recorded by the profiler"
        return backend_from_kernels(names), "; ".join(x for x in (note, seen) if x)

    def run_prefill(self, names, batch, length):
        """Causal SDPA with each backend forced in turn through sdpa_kernel, then the fastest."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                    "efficient": SDPBackend.EFFICIENT_ATTENTION}
        sdpa = self.t.nn.functional.scaled_dot_product_attention
        shape = dict(batch=batch, length=length)
        bytes_, flops = prefill_bytes(batch, length), prefill_flops(batch, length)
        results = []
        try:
            p = self.peers
            n = rotation_count(bytes_, self.l2_bytes)
            sets = [(p.randn(batch, Q_HEADS, length, HEAD_DIM), p.randn(batch, KV_HEADS, length, HEAD_DIM),
                     p.randn(batch, KV_HEADS, length, HEAD_DIM)) for _ in range(n)]
        except Exception as exc:
            return [error_case(nm, one_line(exc), note=NO_SINKS_NOTE) for nm in names]
        try:
            for name, key in zip(names, PREFILL_BACKENDS):
                results.append(self.prefill_backend(name, key, backends[key], sdpa_kernel, sdpa, sets, shape,
                                                    bytes_, flops))
                self.free()
        finally:
            del sets
            self.free()
        ran = [r for r in results if r["status"] == "ok"]
        if not ran:
            results.append(error_case(names[-1], "no SDPA backend ran at this shape", note=NO_SINKS_NOTE))
            return results
        best = dict(min(ran, key=lambda r: r["median_us"]))
        best["name"] = names[-1]
        best["note"] = "fastest of " + ", ".join("%s %.1f us" % (r["backend"], r["median_us"]) for r in ran) \
                       + "; " + NO_SINKS_NOTE
        results.append(best)
        return results

    def prefill_backend(self, name, key, backend, sdpa_kernel, sdpa, sets, shape, bytes_, flops):
        """One backend; where it refuses grouped K/V (enable_gqa), K/V are expanded to 64 heads
        outside the timed call and that is said in the note."""
        import warnings

        def gqa(s):
            sdpa(s[0], s[1], s[2], is_causal=True, enable_gqa=True)

        def expanded(s):
            sdpa(s[0], s[1], s[2], is_causal=True)

        reasons = []
        with sdpa_kernel(backend):
            for variant, run in (("gqa", gqa), ("expanded", expanded)):
                try:
                    inputs = sets if variant == "gqa" else [
                        (q, k.repeat_interleave(Q_HEADS // KV_HEADS, dim=1),
                         v.repeat_interleave(Q_HEADS // KV_HEADS, dim=1)) for q, k, v in sets]
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        try:
                            run(inputs[0])  # the probe: raises when the backend cannot take these inputs
                        except Exception as exc:
                            why = "; ".join(str(w.message).strip().splitlines()[0] for w in caught)
                            raise BackendRefused(one_line(exc) + (" (" + why[:300] + ")" if why else ""))
                    times = time_runs(self.t, run, inputs, self.args.warmup, self.args.runs)
                    note = NO_SINKS_NOTE
                    if variant == "expanded":
                        note = ("K/V expanded to %d heads outside the timed call (this backend refused "
                                "enable_gqa: %s); " % (Q_HEADS, reasons[0])) + NO_SINKS_NOTE
                    return summary(name, times, bytes_, flops, shape, key, note, len(inputs))
                except Exception as exc:
                    reasons.append(one_line(exc))
                finally:
                    inputs = None
                    self.free()
        return error_case(name, "backend %s did not run: with enable_gqa: %s; with expanded K/V: %s"
                          % (key, reasons[0], reasons[-1] if len(reasons) > 1 else "not tried"),
                          backend=key, note=NO_SINKS_NOTE)


# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="torch_peers.py",
        description="Measure the PyTorch peers of the Switchyard kernels on one CUDA GPU (bf16, "
                    "gpt-oss-120b shapes) and write the results as JSON.")
    ap.add_argument("--output", metavar="FILE.json", help="where to write the results (required unless --list)")
    ap.add_argument("--case", metavar="TEXT", help="only the cases whose name contains TEXT")
    ap.add_argument("--runs", type=int, default=MIN_RUNS, help="timed runs per case (at least %d; default %d)"
                    % (MIN_RUNS, MIN_RUNS))
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs before timing (default 10)")
    ap.add_argument("--quick", action="store_true",
                    help="the same cases at small shapes (a smoke run; names stay, 'shape' says what ran)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args(argv)
    if args.runs < MIN_RUNS:
        ap.error("--runs %d: at least %d runs are needed for the median and percentiles" % (args.runs, MIN_RUNS))
    if args.warmup < 0:
        ap.error("--warmup %d: must be 0 or more" % args.warmup)
    if not args.list and not args.output:
        ap.error("--output FILE.json is required")
    if args.case is not None and not selected_specs(args.case):
        ap.error("--case %r matches no case (see --list)" % args.case)
    return args


def write_json_atomically(path, doc):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def print_table(cases, out=sys.stdout):
    out.write("%-44s %-6s %11s %9s %9s  %s\n" % ("case", "status", "median_us", "GB/s", "TFLOP/s", "backend"))
    for c in cases:
        if c["status"] != "ok":
            out.write("%-44s %-6s %s\n" % (c["name"], c["status"], c["reason"]))
            continue
        tf = "%9.1f" % c["TFLOPs"] if c["TFLOPs"] else "%9s" % "-"
        out.write("%-44s %-6s %11.1f %9.1f %s  %s\n" % (c["name"], c["status"], c["median_us"], c["GBps"], tf,
                                                       c["backend"] or ""))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        for name in all_case_names():
            if not args.case or args.case in name:
                print(name)
        return 0
    try:
        import torch
    except ImportError as exc:
        sys.stderr.write("torch_peers.py: PyTorch is not importable (%s)\n" % exc)
        return 3
    if not torch.cuda.is_available() or args.device >= torch.cuda.device_count():
        sys.stderr.write("torch_peers.py: --device %d: no such CUDA device (%d visible)\n"
                         % (args.device, torch.cuda.device_count() if torch.cuda.is_available() else 0))
        return 3
    torch.cuda.set_device(args.device)
    props = torch.cuda.get_device_properties(args.device)
    l2_bytes = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
    runner = Runner(torch, args, l2_bytes)
    cases = []
    with torch.inference_mode():
        for spec in selected_specs(args.case):
            for result in runner.run_spec(spec):
                if not args.case or args.case in result["name"] or spec["builder"] == "prefill":
                    cases.append(result)
                    sys.stderr.write("%s: %s\n" % (result["name"], result["status"] if result["status"] != "ok"
                                                   else "%.1f us" % result["median_us"]))
    copy_case = next((c for c in cases if c["name"] == "torch.copy.d2d" and c["status"] == "ok"), None)
    try:
        import importlib.metadata as md
        triton_version = md.version("triton")
    except Exception:
        triton_version = None
    doc = {
        "benchmark": "torch_peers",
        "date": datetime.date.today().isoformat(),
        "device": {"name": props.name, "memory_bytes": props.total_memory,
                   "multiprocessors": props.multi_processor_count, "l2_bytes": l2_bytes},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "triton": triton_version,
        "method": {
            "warmup": args.warmup, "runs": args.runs,
            "timing": "CUDA events (torch.cuda.Event) around each run on the current stream, after a head start of queued memsets",
            "statistics": "median, p10, p90 (linear interpolation), min",
            "inputs": "fresh torch.randn bf16 per case, seed %d; rotated among copies totalling at least "
                      "%dx L2 (L2 %d bytes)" % (args.seed, ROTATION_L2_MULTIPLE, l2_bytes),
            "bytes": "compulsory traffic: each input read once, each output written once",
            "flops": "2 per multiply-add; attention counts QK^T and PV; causal halves",
            "prefill_backends": list(PREFILL_BACKENDS),
            "prefill_math": "not measured: the math backend materialises the B x Hq x L x L scores (17 GB in "
                            "f32 at 1 x 8192) and is far slower than the fused backends",
            "quick": args.quick,
            "case_filter": args.case,
        },
        "copy": ({"bytes": copy_case["bytes"], "median_us": copy_case["median_us"], "GBps": copy_case["GBps"]}
                 if copy_case else None),
        "cases": cases,
    }
    write_json_atomically(args.output, doc)
    print_table(cases)
    return 1 if any(c["status"] != "ok" for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
