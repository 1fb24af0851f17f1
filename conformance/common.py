"""What the conformance harnesses share: running kbuild, mapping an
Inductor command line to kbuild's arguments, comparing two argvs token by
token, and writing results as JSON. Standard library only (the harnesses
run in chroots and on the GPU machine, with whatever Python is there)."""
import json
import subprocess
import time


def run_kbuild(kbuild, args, cwd=None, env=None):
    """kbuild ARGS: the finished process (text output) and its seconds."""
    start = time.perf_counter()
    p = subprocess.run([kbuild] + list(args), capture_output=True, text=True, cwd=cwd, env=env,
                       check=False)
    return p, time.perf_counter() - start


def first_diff(inductor, kbuild):
    """Where two argvs part: the index and the two tokens (or the surplus)."""
    for i, (x, y) in enumerate(zip(inductor, kbuild)):
        if x != y:
            return {"index": i, "inductor": x, "kbuild": y}
    return {"index": min(len(inductor), len(kbuild)), "inductor": inductor[len(kbuild):][:3],
            "kbuild": kbuild[len(inductor):][:3]}


def isa_spec(argv):
    """The --isa value for the ISA flags in an Inductor argv."""
    named = [("-mamx-tile", "amx"), ("-mavx512vnni", "avx512_vnni"), ("-mavx512f", "avx512"),
             ("-mavx2", "avx2")]
    spec = next((name for flag, name in named if flag in argv), None)
    if spec is None:
        for macro, name in (("CPU_CAPABILITY_NEON", "neon"), ("CPU_CAPABILITY_SVE256", "sve256")):
            if macro in argv:
                return name
        return "none"
    extras = [e for flag, e in (("-mavx512bf16", "bf16"), ("-mamx-fp16", "fp16")) if flag in argv]
    return "+".join([spec] + extras)


def device_of(argv):
    """The device an Inductor argv was built for, by the macro it defines."""
    device = "cpu"
    for macro, name in (("USE_CUDA", "cuda"), ("USE_ROCM", "cuda"), ("USE_MPS", "mps"),
                        ("USE_XPU", "xpu")):
        if macro in argv:
            device = name
    return device


def mode_args(argv):
    """kbuild's mode flag for an Inductor argv (preprocess, PCH, object, AOT)."""
    if "-E" in argv:
        return ["--preprocess"]
    if "-x" in argv:
        return ["--precompile"]
    if "-c" in argv:
        return ["--compile-only"]
    return ["--aot"] if "-ltorch" in argv and "-ltorch_python" not in argv else []


def sources_of(argv):
    """The sources: the words after the compiler (and a PCH's -x LANG) up to
    the first option."""
    sources = []
    for tok in argv[3 if "-x" in argv else 1:]:
        if tok.startswith("-"):
            break
        sources.append(tok)
    return sources


def kbuild_args_for(argv, isa=None, device=None):
    """kbuild's arguments for the inputs of one Inductor command (compiler,
    device, mode, optimization, warnings, torch, ISA, PCH, sources, output):
    the argv kbuild prints for them is what gets compared. `isa`: the --isa
    value (default: the one the argv's flags name); `device`: the device
    (default: the one its macros name)."""
    args = ["--cxx", argv[0], "--device", device or device_of(argv)] + mode_args(argv)
    if "-O1" in argv:
        args.append("--min-optimize")
    if "-O0" in argv:
        args.append("--debug")
    if "-Wall" not in argv:
        args.append("--no-warning-all")
    if "TORCH_INDUCTOR_CPP_WRAPPER" not in argv:
        args.append("--no-torch")
    args += ["--isa", isa if isa is not None else isa_spec(argv)]
    if "-include" in argv:
        args += ["--include-pch", argv[argv.index("-include") + 1]]
    return args + sources_of(argv) + ["-o", argv[argv.index("-o") + 1]]


def save_json(path, data):
    """`data` as indented JSON at `path` (ends with a newline)."""
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
