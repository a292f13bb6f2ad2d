"""Model precision: the one a command runs its model in on a device, and casting a model to it.

auto is fp16 on CUDA. On the CPU it is fp32, except for the commands whose
half-precision output was checked there (`cpu_bf16`: gensets and taste, whose
benchmarks compare bf16 with fp32), which take bf16 where the CPU does bf16
arithmetic natively (AVX512-BF16 or AMX); elsewhere bf16 would be slower than
fp32. fp16 is CUDA's alone.

Training (`train --method mlm|poi`, `--precision`) keeps its weights and
optimiser in fp32 and runs the forward pass under bf16 autocast, or in fp32;
it is fp32 unless asked (a seed gives the same model on every machine), and
auto is bf16 on CUDA devices that have it and on CPUs with native bf16. fp16
would need loss scaling, which the loop does not do.
"""

from __future__ import annotations

from contextlib import nullcontext

from ..errors import SembedError

PRECISIONS = ("auto", "fp32", "fp16", "bf16")
TRAINING_PRECISIONS = ("auto", "fp32", "bf16")
CPU_BF16_FLAGS = {"avx512_bf16", "amx_bf16"}


def native_bf16() -> bool:
    """Whether this CPU does bfloat16 arithmetic natively (Linux /proc/cpuinfo flags; False where unreadable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return bool(CPU_BF16_FLAGS & set(line.partition(":")[2].split()))
    except OSError:
        pass
    return False


def resolve(precision: str, device: str, *, cpu_bf16: bool) -> str:
    """fp32, fp16 or bf16 for `precision` on `device` (see the module docstring); a usage error where not allowed."""
    if precision not in PRECISIONS:
        raise SembedError(f"unknown precision '{precision}'", f"use {', '.join(PRECISIONS)}")
    cuda = device.startswith("cuda")
    if precision == "auto":
        return "fp16" if cuda else "bf16" if cpu_bf16 and native_bf16() else "fp32"
    if cuda or precision == "fp32" or (precision == "bf16" and cpu_bf16):
        return precision
    on_cpu, allowed = ("fp32 or bf16", "auto, fp32 or bf16") if cpu_bf16 else ("fp32", "auto or fp32")
    raise SembedError(
        f"--precision {precision} needs CUDA; on the CPU this command runs in {on_cpu}", f"use --precision {allowed}"
    )


def cast(model, precision: str):
    """`model` (a torch module) in `precision`, in place; returned for chaining."""
    if precision != "fp32":
        import torch

        model.to({"bf16": torch.bfloat16, "fp16": torch.float16}[precision])
    return model


def resolve_training(precision: str, device: str) -> str:
    """fp32 or bf16 for training on `device` (see the module docstring); a usage error where not allowed."""
    if precision not in TRAINING_PRECISIONS:
        raise SembedError(f"unknown training precision '{precision}'", f"use {', '.join(TRAINING_PRECISIONS)}")
    if precision != "auto":
        return precision
    if device.startswith("cuda"):
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if native_bf16() else "fp32"


def autocast(precision: str, device: str):
    """The context a training step's forward pass runs in: bf16 autocast, or nothing for fp32."""
    if precision == "fp32":
        return nullcontext()
    import torch

    return torch.autocast(device.split(":")[0], dtype=torch.bfloat16)
