#!/usr/bin/env python3
"""Prints a C program that, compiled against the frozen ABI headers and run, writes one
SY_STATIC_ASSERT per ABI constant: every enumerator of the given headers, and the #define'd limits
below, at the value the frozen headers give it. Compiled against the current headers, those
asserts prove that no value an old plugin was built with has changed.

    gen_frozen_constants.py HEADER... > gen.c

Counters that grow with every minor (names ending in _COUNT_) are left out, and SY_ABI_MINOR may
only grow."""
import re
import sys

EXACT_MACROS = ['SY_ABI_MAJOR', 'SY_MAX_DIMS', 'SY_MAX_CAPS_LAYOUTS', 'SY_ERROR_MSG_LEN']
AT_LEAST_MACROS = ['SY_ABI_MINOR']

names = []
for path in sys.argv[1:]:
    text = re.sub(r'/\*.*?\*/', '', open(path).read(), flags=re.S)
    for body in re.findall(r'\benum\b[^{;]*\{(.*?)\}', text, flags=re.S):
        for item in body.split(','):
            name = item.split('=')[0].strip()
            if name and not name.endswith('_COUNT_'):
                names.append(name)

print('#include <stdio.h>')
print('int main(void)')
print('{')
print('    printf("/* Generated from the frozen ABI 1.0 headers by tests/abi/gen_frozen_constants.py. */\\n");')
for name in names + EXACT_MACROS:
    print(f'    printf("SY_STATIC_ASSERT((long long)({name}) == %lldLL, \\"{name} keeps its 1.0 value\\");\\n", '
          f'(long long)({name}));')
for name in AT_LEAST_MACROS:
    print(f'    printf("SY_STATIC_ASSERT((long long)({name}) >= %lldLL, \\"{name} only grows\\");\\n", '
          f'(long long)({name}));')
print('    return 0;')
print('}')
