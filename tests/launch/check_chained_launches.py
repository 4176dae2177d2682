#!/usr/bin/env python3
"""Every kernel that a plugin launches overlapped with the kernel before it (SY_GPU_LAUNCH_CHAINED,
SY_GPU_LAUNCH_OVERLAPPED; plugins/common/sy_elem_gpu.cuh) must wait for that kernel before it
touches global memory: its body starts with sy_gpu_wait_for_previous_kernel(), after nothing but
shared-memory declarations, type aliases and compile-time constants. A missing wait is a race that
tests on a GPU catch only by luck, so the sources are checked instead.

Usage: check_chained_launches.py [REPO]   (exit 0: every launched kernel waits; 1: some do not)"""

import os
import re
import sys

LAUNCH = re.compile(r"\bSY_GPU_LAUNCH_(?:CHAINED|OVERLAPPED)\s*\(")
ALLOWED = ("__shared__", "extern __shared__", "SY_GPU_DYNAMIC_SHARED", "using ", "constexpr ", "static_assert")
WAIT = "sy_gpu_wait_for_previous_kernel()"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def call_args(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren."""
    depth, args, start = 0, [], open_paren + 1
    for i in range(open_paren, len(text)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args
        elif ch == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
    raise ValueError("unbalanced call at offset %d" % open_paren)


def kernel_name(arg):
    """`moe_mma_kernel<W13, PLANES, WIDE>` -> moe_mma_kernel (template arguments may span commas,
    which call_args split: the name is in the first piece); None for a macro's own parameter."""
    m = re.match(r"\s*([A-Za-z_]\w*)", arg)
    return m.group(1) if m and m.group(1) != "__VA_ARGS__" else None


def launched_kernels(sources):
    found = {}
    for path, text in sources.items():
        for m in LAUNCH.finditer(text):
            macro_args = call_args(text, m.end() - 1)
            # (overlap,) grid, block, shared bytes, stream, kernel: the kernel is what follows the stream,
            # possibly split at its template arguments' commas.
            first_kernel_piece = 5 if "OVERLAPPED" in m.group(0) else 4
            if len(macro_args) <= first_kernel_piece:
                continue
            name = kernel_name(macro_args[first_kernel_piece])
            if name:
                found.setdefault(name, []).append(path)
    return found


def kernel_bodies(sources, name):
    pattern = re.compile(r"__global__[^;{}]*?\b%s\s*\(" % re.escape(name))
    for path, text in sources.items():
        for m in pattern.finditer(text):
            body_open = text.index("{", m.end())
            yield path, text[body_open + 1:]


def waits_first(body):
    for statement in body.split(";"):
        s = " ".join(statement.split())
        if not s:
            continue
        if s == WAIT:
            return True
        if "{" in s or "}" in s or not s.startswith(ALLOWED):
            return False
    return False


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sources = {}
    for root, _, files in os.walk(os.path.join(repo, "plugins")):
        for f in files:
            if f.endswith((".cu", ".cuh")):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    sources[os.path.relpath(path, repo)] = strip_comments(fh.read())
    launched = launched_kernels(sources)
    if not launched:
        print("no overlapped launch found: the pattern no longer matches the sources")
        return 1
    bad = 0
    for name in sorted(launched):
        bodies = list(kernel_bodies(sources, name))
        if not bodies:
            print("FAIL %s (launched in %s): no __global__ definition found" % (name, ", ".join(sorted(set(launched[name])))))
            bad += 1
            continue
        for path, body in bodies:
            if waits_first(body):
                print("PASS %s (%s)" % (name, path))
            else:
                print("FAIL %s (%s): launched overlapped but does not start with %s" % (name, path, WAIT))
                bad += 1
    print("%d kernels launched overlapped, %d without the wait first" % (len(launched), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
