"""Which precision a model runs in: auto by device and by what the command checked on the CPU."""

import pytest

from sembed_cli.errors import SembedError
from sembed_cli.models import precision


@pytest.mark.parametrize("native, expected", [(False, "fp32"), (True, "bf16")])
def test_auto_on_the_cpu_takes_bf16_only_where_native_and_checked(monkeypatch, native, expected):
    monkeypatch.setattr(precision, "native_bf16", lambda: native)
    assert precision.resolve("auto", "cpu", cpu_bf16=True) == expected
    assert precision.resolve("auto", "cpu", cpu_bf16=False) == "fp32"


def test_auto_on_cuda_is_fp16_and_every_precision_is_allowed_there():
    assert precision.resolve("auto", "cuda", cpu_bf16=False) == "fp16"
    assert [precision.resolve(p, "cuda:1", cpu_bf16=False) for p in ("fp32", "fp16", "bf16")] == [
        "fp32",
        "fp16",
        "bf16",
    ]


@pytest.mark.parametrize(
    "wanted, cpu_bf16, message, hint",
    [
        (
            "fp16",
            True,
            "--precision fp16 needs CUDA; on the CPU this command runs in fp32 or bf16",
            "use --precision auto, fp32 or bf16",
        ),
        (
            "bf16",
            False,
            "--precision bf16 needs CUDA; on the CPU this command runs in fp32",
            "use --precision auto or fp32",
        ),
        ("int8", True, "unknown precision 'int8'", "use auto, fp32, fp16, bf16"),
    ],
)
def test_refused_precisions_say_what_is_allowed(wanted, cpu_bf16, message, hint):
    with pytest.raises(SembedError) as caught:
        precision.resolve(wanted, "cpu", cpu_bf16=cpu_bf16)
    assert (caught.value.message, caught.value.hint) == (message, hint)


@pytest.mark.parametrize("native, expected", [(False, "fp32"), (True, "bf16")])
def test_training_is_fp32_unless_asked_and_auto_takes_native_bf16(monkeypatch, native, expected):
    import torch

    monkeypatch.setattr(precision, "native_bf16", lambda: native)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: native)
    assert precision.resolve_training("auto", "cpu") == expected
    assert precision.resolve_training("auto", "cuda:0") == expected
    assert [precision.resolve_training(p, "cpu") for p in ("fp32", "bf16")] == ["fp32", "bf16"]
    with pytest.raises(SembedError) as caught:
        precision.resolve_training("fp16", "cuda")
    assert (caught.value.message, caught.value.hint) == ("unknown training precision 'fp16'", "use auto, fp32, bf16")


def test_autocast_runs_matrix_products_in_bf16_and_fp32_leaves_them():
    import torch

    layer = torch.nn.Linear(2, 2)
    with precision.autocast("bf16", "cpu"):
        assert layer(torch.ones(1, 2)).dtype == torch.bfloat16
    with precision.autocast("fp32", "cpu"):
        assert layer(torch.ones(1, 2)).dtype == torch.float32


def test_cast_changes_the_parameters_dtype_and_fp32_leaves_them():
    import torch

    layer = torch.nn.Linear(2, 2)
    assert precision.cast(layer, "fp32").weight.dtype == torch.float32
    assert precision.cast(layer, "bf16").weight.dtype == torch.bfloat16
