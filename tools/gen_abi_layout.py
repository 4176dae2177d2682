#!/usr/bin/env python3
"""Prints C code that, compiled and run, emits _Static_assert lines pinning the offset of every
member of the ABI structs in the given headers. Used once per ABI version to freeze a layout:
    tools/gen_abi_layout.py engine/include/switchyard/{caps,plugin}.h > /tmp/p.c
    cc -Iengine/include /tmp/p.c -o /tmp/p && /tmp/p > engine/include/switchyard/abi_v1_layout.h
New members of a later minor version get their asserts appended by hand; existing lines never change."""
import re, sys

structs = []
for path in sys.argv[1:]:
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    for m in re.finditer(r'typedef struct (\w+) \{(.*?)\} (\w+);', text, flags=re.S):
        body, name = m.group(2), m.group(3)
        members = []
        for decl in body.split(';'):
            decl = ' '.join(decl.split())
            if not decl:
                continue
            fp = re.search(r'\(\*(\w+)\)', decl)
            if fp:
                members.append(fp.group(1)); continue
            decl = re.sub(r'\[[^\]]*\]', '', decl)
            parts = decl.split(',')
            first = parts[0].split()[-1].lstrip('*')
            members.append(first)
            members += [p.strip().lstrip('*') for p in parts[1:]]
        structs.append((name, members))

print('#include <stdio.h>\n#include <stddef.h>\n#include "switchyard/plugin.h"')
print('int main(void) {')
print('  printf("/* Generated once by tools/gen_abi_layout.py: pins every v1 member. Never edit a line; append for new minors. */\\n");')
print('  printf("#ifndef SWITCHYARD_ABI_V1_LAYOUT_H\\n#define SWITCHYARD_ABI_V1_LAYOUT_H\\n");')
for name, members in structs:
    for mem in members:
        print(f'  printf("SY_STATIC_ASSERT(offsetof({name}, {mem}) == %zu, \\"{name} v1 layout\\");\\n", offsetof({name}, {mem}));')
    print(f'  printf("SY_STATIC_ASSERT(sizeof({name}) >= %zu, \\"{name} v1 layout\\");\\n", sizeof({name}));')
print('  printf("#endif\\n");\n  return 0;\n}')
