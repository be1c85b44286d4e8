#!/usr/bin/env python3
"""Compares two PTX modules kernel by kernel at the SASS level, for refactors whose PTX moved
without a GPU at hand to run the suites (a byte-identical PTX needs no such check: use cmp).

    scripts/sass_diff.py OLD.ptx NEW.ptx [--arch sm_90] [-v]

Each module goes through ptxas (target/tools/bin/ptxas, from `cargo xtask setup`) and
cuobjdump (PyPI `nvidia-cuda-cuobjdump`; CUOBJDUMP or PATH). Per kernel it prints one of
  identical                 the same SASS, instruction for instruction
  same modulo registers     the same instructions with registers renamed (first use order)
  DIFFERENT                 anything else (with -v, the first lines of the difference)
and the kernel's instruction counts. Addresses and encodings are ignored; branch targets are
compared as labels only under "modulo registers".
"""
import argparse, difflib, os, re, shutil, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tool(name, env, default):
    path = os.environ.get(env) or shutil.which(name) or default
    if not path or not os.path.exists(path):
        sys.exit(f"error: {name} not found (set {env} or put it on PATH)")
    return path


def sass(ptx, arch, ptxas, cuobjdump):
    with tempfile.TemporaryDirectory() as d:
        cubin = os.path.join(d, "m.cubin")
        subprocess.run([ptxas, f"-arch={arch}", "-O3", ptx, "-o", cubin], check=True)
        text = subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True, text=True).stdout
    kernels, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            kernels[name] = []
        elif name is not None:
            line = re.sub(r"/\*[0-9a-f]{4,}\*/|/\* 0x[0-9a-f]+ \*/", "", line).strip()
            if line:
                kernels[name].append(line)
    return kernels


def canonical(lines):
    """Registers renamed in order of first use; branch targets dropped."""
    names = {}

    def rename(m):
        kind, n = m.group(1), m.group(2)
        if n in ("Z", "T"):
            return m.group(0)
        seen = names.setdefault(kind, {})
        return kind + seen.setdefault(n, str(len(seen)))

    return [re.sub(r"BRA 0x[0-9a-f]+", "BRA _", re.sub(r"\b(UR|R|UP|P)(\d+|Z|T)\b", rename, l)) for l in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("-v", action="store_true", help="show the start of each difference")
    args = ap.parse_args()
    ptxas = tool("ptxas", "PTXAS", os.path.join(ROOT, "target/tools/bin/ptxas"))
    cuobjdump = tool("cuobjdump", "CUOBJDUMP", None)
    old, new = (sass(p, args.arch, ptxas, cuobjdump) for p in (args.old, args.new))
    counts = {"identical": 0, "same modulo registers": 0, "DIFFERENT": 0}
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k, []), new.get(k, [])
        verdict = "identical" if a == b else "same modulo registers" if canonical(a) == canonical(b) else "DIFFERENT"
        counts[verdict] += 1
        if verdict != "identical":
            print(f"{k:32s} {verdict:22s} {len(a)} -> {len(b)} instructions")
            if args.v and verdict == "DIFFERENT":
                diff = difflib.unified_diff(canonical(a), canonical(b), lineterm="", n=0)
                print("\n".join(list(diff)[2:14]))
    print(f"{args.arch}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


if __name__ == "__main__":
    main()
