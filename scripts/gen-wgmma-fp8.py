#!/usr/bin/env python3
# Prints the WgmmaFp8<N> specialisations of kernel_src/device/sm90.cuh: one per instruction
# shape m64nNk32 (the asm operand list has N/2 accumulator registers, which a template cannot
# spell). Paste the output over the specialisations there after changing the pattern.
Ns = [8, 16, 24, 32, 48, 64, 80, 96, 128, 160, 192, 224, 256]
out = []
for n in Ns:
    r = n // 2
    regs = ", ".join("%%%d" % i for i in range(r))
    out.append("template <> struct WgmmaFp8<%d> {" % n)
    out.append("    static __device__ __forceinline__ void mma(float (&d)[%d], u64 desc_a, u64 desc_b, u32 scale_d) {" % r)
    out.append("        asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"" % (r + 2))
    out.append("                     \"wgmma.mma_async.sync.aligned.m64n%dk32.f32.e4m3.e4m3 {\"" % n)
    # split the register list over several string pieces for readability
    pieces = ["%%%d" % i for i in range(r)]
    for i in range(0, r, 16):
        chunk = ", ".join(pieces[i:i+16])
        sep = ", " if i + 16 < r else ""
        out.append("                     \"%s%s\"" % (chunk, sep))
    out.append("                     \"}, %%%d, %%%d, p, 1, 1;\\n}\\n\"" % (r, r + 1))
    ops = ['"+f"(d[%d])' % i for i in range(r)]
    lines = []
    for i in range(0, r, 8):
        lines.append("                     " + ", ".join(ops[i:i+8]) + ("," if i + 8 < r else ""))
    out.append("                     : " + lines[0].strip())
    out.extend(lines[1:])
    out.append("                     : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));")
    out.append("    }")
    out.append("};")
    out.append("")
print("\n".join(out))
