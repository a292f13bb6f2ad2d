"""--backend onnx and --quantize int8 (sembed_cli/models/onnx_encoder.py): the same vectors as torch, without torch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import ROOT, jsonl, sembed

from sembed_cli.errors import SembedError
from sembed_cli.models import onnx_encoder, sentence_models

TEXTS = [
    "A man is playing a guitar.",
    "A woman slices an onion.",
    "",
    "x",
    "a long text of many words " * 20,
]  # longer than the tiny model's 64 tokens: truncated as torch does
HEAVY = ("torch", "transformers", "sentence_transformers", "spacy")
# Runs `sembed ARGS` and says on stderr which heavy libraries the process imported.
IMPORTS_PROBE = (
    "import atexit, sys, runpy\n"
    f"atexit.register(lambda: print('IMPORTED', [m for m in {HEAVY!r} if m in sys.modules], "
    "file=sys.stderr))\n"
    "sys.argv = ['sembed', *sys.argv[1:]]\n"
    "runpy.run_module('sembed_cli', run_name='__main__')\n"
)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Every test has its own export cache, and no encoder cached by an earlier test."""
    monkeypatch.setenv("SEMBED_CACHE", str(tmp_path / "cache"))
    sentence_models.load_onnx.cache_clear()
    yield
    sentence_models.load_onnx.cache_clear()


@pytest.fixture
def model(tiny_model, tmp_path) -> Path:
    """A copy of the tiny model (without an export an earlier test's search left in it) that a test may export
    into, change and break."""
    return Path(shutil.copytree(tiny_model, tmp_path / "model", ignore=shutil.ignore_patterns("onnx")))


def torch_vectors(model: Path, texts) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model), device="cpu").encode(list(texts), convert_to_numpy=True)


def set_pooling(model: Path, modes, normalize: bool = True) -> None:
    config = json.loads((model / "1_Pooling" / "config.json").read_text())
    config = {k: v for k, v in config.items() if not k.startswith("pooling_mode")}
    (model / "1_Pooling" / "config.json").write_text(json.dumps({**config, "pooling_mode": list(modes)}))
    modules = json.loads((model / "modules.json").read_text())
    modules = [m for m in modules if not m["type"].endswith("Normalize")]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (model / "modules.json").write_text(json.dumps(modules))


def exports_counted(monkeypatch) -> list[Path]:
    """Record every fp32 export from now on."""
    made: list[Path] = []
    real = onnx_encoder.export_fp32

    def counted(pipeline, path, key):
        made.append(path)
        real(pipeline, path, key)

    monkeypatch.setattr(onnx_encoder, "export_fp32", counted)
    return made


# --- the same vectors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "modes, normalize",
    [
        (["mean"], True),
        (["cls"], False),
        (["max"], True),
        (["mean_sqrt_len_tokens"], False),
        (["weightedmean"], True),
        (["lasttoken"], True),
        (["cls", "max", "mean"], False),
    ],
)
def test_fp32_onnx_gives_the_torch_vectors_for_every_pooling(model, modes, normalize, one_torch_thread):
    set_pooling(model, modes, normalize)
    vectors = onnx_encoder.load(model).encode(TEXTS, batch_size=2)
    expected = torch_vectors(model, TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == expected.shape
    np.testing.assert_allclose(vectors, expected, atol=2e-6)


def test_legacy_pooling_config_and_lower_case():
    config = {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False}
    assert onnx_encoder.pooling_modes(config) == ("cls", "mean")
    assert onnx_encoder.pooling_modes({}) == ("mean",)
    with pytest.raises(SembedError, match="does not know the pooling mode 'attention'"):
        onnx_encoder.pooling_modes({"pooling_mode": "attention"})


def test_int8_is_close_to_fp32_and_named_for_the_cpu(model, monkeypatch, one_torch_thread):
    monkeypatch.setattr(onnx_encoder, "cpu_instruction_set", lambda: "avx512_vnni")
    encoder = onnx_encoder.load(model, "int8")
    assert encoder.path == model / "onnx" / "model_qint8_avx512_vnni.onnx"
    assert (model / "onnx" / "model.onnx").exists()  # quantised from the fp32 export, which stays for reuse
    assert encoder.identity == {"backend": "onnx", "quantization": "qint8_avx512_vnni"}
    fp32 = onnx_encoder.load(model).encode(TEXTS)
    cosines = (encoder.encode(TEXTS) * fp32).sum(axis=1)
    assert cosines.min() > 0.95 and not np.allclose(encoder.encode(TEXTS), fp32, atol=1e-6)


@pytest.mark.parametrize(
    "flags, machine, isa, seven_bit",
    [
        ({"avx2", "avx512f", "avx512_vnni"}, "x86_64", "avx512_vnni", True),
        ({"avx2", "avx512f", "avx512vnni"}, "x86_64", "avx512_vnni", True),
        ({"avx2", "avx512f"}, "x86_64", "avx512", True),
        ({"avx2", "fma"}, "x86_64", "avx2", True),
        (set(), "x86_64", "avx2", True),
        (set(), "aarch64", "arm64", False),
    ],
)
def test_the_int8_config_follows_the_instruction_set(flags, machine, isa, seven_bit):
    """Signed per-channel weights, 7-bit on every x86 instruction set (8-bit ones lost 0.38 on AVX-512 VNNI)."""
    assert onnx_encoder.instruction_set(flags, machine) == isa
    assert onnx_encoder.int8_config(isa) == onnx_encoder.Int8Config("QInt8", per_channel=True, reduce_range=seven_bit)
    assert onnx_encoder.file_name("int8", isa) == f"model_qint8_{isa}.onnx"


def test_sessions_run_all_graph_optimisations_with_threads_that_do_not_spin():
    import onnxruntime

    options = onnx_encoder.session_options(2)
    assert options.intra_op_num_threads == 2 and options.inter_op_num_threads == 1
    assert options.graph_optimization_level == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_backend_identity_names_what_changes_the_vectors(model):
    assert sentence_models.backend_identity(object()) == {"backend": "torch"}
    assert sentence_models.backend_identity(onnx_encoder.load(model)) == {"backend": "onnx"}


# --- exported once, next to the model or in the cache; stale and corrupt exports rebuilt ----------------------


def test_exported_once_next_to_the_model_then_reused(model, monkeypatch):
    made = exports_counted(monkeypatch)
    first = onnx_encoder.load(model)
    assert first.path == model / "onnx" / "model.onnx" and made == [first.path]
    assert first.max_seq_length == 64  # the tiny model's, as sentence-transformers reads it
    second = onnx_encoder.load(model)
    assert made == [first.path]  # reused, not exported again
    np.testing.assert_array_equal(first.encode(TEXTS), second.encode(TEXTS))
    assert not [p for p in (model / "onnx").iterdir() if ".tmp" in p.name]


def test_a_model_that_changed_is_exported_again(model, monkeypatch, caplog):
    onnx_encoder.load(model)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-5}))  # as if retrained in place
    made = exports_counted(monkeypatch)
    onnx_encoder.load(model)
    assert made == [model / "onnx" / "model.onnx"]
    assert "is stale (made from another version of the model, or with other settings)" in caplog.text


def quantized_weight_types(path: Path) -> set[str]:
    import onnx

    return {
        onnx.TensorProto.DataType.Name(t.data_type)
        for t in onnx.load(str(path)).graph.initializer
        if t.name.endswith("_quantized")
    }


def test_an_int8_export_made_with_an_earlier_config_is_rebuilt(model, monkeypatch, caplog):
    """sembed before 7-bit signed AVX2 weights wrote 7-bit unsigned ones: such an export is stale, the fp32 one is
    not."""
    monkeypatch.setattr(onnx_encoder, "cpu_instruction_set", lambda: "avx2")
    current = onnx_encoder.int8_config
    monkeypatch.setattr(onnx_encoder, "int8_config", lambda isa: onnx_encoder.Int8Config("QUInt8", True, True))
    earlier = onnx_encoder.load(model, "int8").path
    assert quantized_weight_types(earlier) == {"UINT8"}
    monkeypatch.setattr(onnx_encoder, "int8_config", current)
    made = exports_counted(monkeypatch)
    rebuilt = onnx_encoder.load(model, "int8")
    assert rebuilt.path == earlier == model / "onnx" / "model_qint8_avx2.onnx" and made == []
    assert "model_qint8_avx2.onnx: it is stale" in caplog.text
    assert quantized_weight_types(rebuilt.path) == {"INT8"}


def test_a_corrupt_export_is_rebuilt(model, monkeypatch, caplog):
    onnx_encoder.load(model)
    (model / "onnx" / "model.onnx").write_bytes(b"half a file")
    made = exports_counted(monkeypatch)
    encoder = onnx_encoder.load(model)
    assert made == [model / "onnx" / "model.onnx"] and "is corrupt" in caplog.text
    assert encoder.encode(["still works"]).shape == (1, 32)


def test_an_onnx_file_sembed_did_not_write_is_left_alone(model, tmp_path):
    import onnx

    foreign = onnx.load(str(onnx_encoder.load(model).path))  # as another exporter would leave it: no sembed key
    del foreign.metadata_props[:]
    onnx.save(foreign, str(model / "onnx" / "model.onnx"))
    before = (model / "onnx" / "model.onnx").read_bytes()
    encoder = onnx_encoder.load(model)
    quantized = onnx_encoder.load(model, "int8")  # made from an fp32 export of sembed's own, in the cache
    assert (model / "onnx" / "model.onnx").read_bytes() == before
    assert encoder.path.parent.parent == tmp_path / "cache" / "onnx"
    assert quantized.path.parent == encoder.path.parent


def test_a_read_only_model_is_exported_to_the_cache_keyed_by_its_content(model, tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_encoder, "writable", lambda folder: not folder.is_relative_to(model))
    encoder = onnx_encoder.load(model)
    key = onnx_encoder.source_key(onnx_encoder.read_pipeline(model))
    assert encoder.path == tmp_path / "cache" / "onnx" / key[:32] / "model.onnx"
    assert not (model / "onnx").exists()
    copy = Path(shutil.copytree(model, tmp_path / "same-model"))  # the same content elsewhere: the same export
    made = exports_counted(monkeypatch)
    assert onnx_encoder.load(copy).path == encoder.path and made == []


def test_nowhere_to_write_is_one_clear_error(model, tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_encoder, "writable", lambda folder: False)
    with pytest.raises(SembedError) as error:
        onnx_encoder.load(model)
    assert str(error.value) == (
        f"cannot export the model at '{model}' to ONNX: no writable place for it "
        f"(hint: make the model directory or {tmp_path / 'cache'} writable (or set "
        "SEMBED_CACHE))"
    )


@pytest.mark.slow
@pytest.mark.subprocess
def test_two_jobs_starting_together_share_one_sound_export(model, tmp_path):
    texts = tmp_path / "in.jsonl"
    texts.write_text(jsonl(*({"text": t} for t in TEXTS if t)))  # the CLI refuses an empty text
    command = [sys.executable, "-m", "sembed_cli", "embed", "-q", "--backend", "onnx", "-m", str(model), str(texts)]
    env = {
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "PATH": "/usr/bin:/bin",
    }
    jobs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(2)]
    outputs = [job.communicate(timeout=300) for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], outputs[0][1] + outputs[1][1]
    first, second = ([orjson.loads(line)["embedding"] for line in out.splitlines()] for out, _ in outputs)
    np.testing.assert_array_equal(first, second)
    assert sorted(p.name for p in (model / "onnx").iterdir()) == [".sembed-export.lock", "model.onnx"]
    np.testing.assert_allclose(first, torch_vectors(model, [t for t in TEXTS if t]), atol=2e-6)


# --- no torch, and the CLI -------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_once_exported_the_onnx_path_imports_no_torch(model, tmp_path):
    onnx_encoder.load(model)
    records = tmp_path / "in.jsonl"  # with s_cf given, component focusing needs no spaCy either
    records.write_text(jsonl({"text": "A man plays.", "s_cf": "man plays"}, {"text": "b", "s_cf": "b"}))
    env = {
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": "1",
        "SEMBED_CACHE": str(tmp_path / "cache"),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            IMPORTS_PROBE,
            "embed",
            "-q",
            "--backend",
            "onnx",
            "--cf-weight",
            "0.5",
            "-m",
            str(model),
            str(records),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "IMPORTED []" in done.stderr
    assert [len(orjson.loads(line)["embedding"]) for line in done.stdout.splitlines()] == [32, 32]


def test_cf_weight_with_onnx_equals_torch(model, one_torch_thread):
    records = jsonl(
        {"text": "A man plays a guitar.", "s_cf": "man plays guitar"},
        {"text_a": "x y", "s_cf_a": "x", "text_b": "z", "s_cf_b": "z"},
    )
    onnx = sembed("embed", "--backend", "onnx", "--cf-weight", "0.3", "--keep-parts", "-m", str(model), input=records)
    torch = sembed("embed", "--cf-weight", "0.3", "--keep-parts", "-m", str(model), input=records)
    assert onnx.exit_code == torch.exit_code == 0, onnx.stderr
    for mine, theirs in zip(onnx.records, torch.records):
        for key in theirs:
            if key.startswith("embedding") and key != "embedding_model":
                np.testing.assert_allclose(mine[key], theirs[key], atol=2e-6)
        assert mine["embedding_model"] == theirs["embedding_model"]  # the fp32 export is the same model
    first = onnx.records[0]
    np.testing.assert_allclose(
        first["embedding"], np.add(first["embedding_basic"], 0.3 * np.asarray(first["embedding_cf"])), atol=1e-6
    )


def test_index_and_search_from_texts_with_onnx(model, tmp_path, one_torch_thread):
    texts = ["Springfield zoo", "Shelbyville museum", "the old mill"]
    built = sembed(
        "index",
        "--backend",
        "onnx",
        "-m",
        str(model),
        "-o",
        str(tmp_path / "idx"),
        input=jsonl(*({"id": n, "text": t} for n, t in enumerate(texts))),
    )
    assert built.exit_code == 0, built.stderr
    settings = json.loads((tmp_path / "idx" / "sembed.json").read_text())["settings"]
    assert settings["backend"] == "onnx" and "quantization" not in settings
    found = sembed("search", "--index", str(tmp_path / "idx"), "--k", "1", input=jsonl({"text": "the old mill"}))
    assert found.exit_code == 0, found.stderr
    assert sentence_models.load_onnx.cache_info().hits == 1  # search took the index's backend
    assert found.records[0]["neighbors"][0]["id"] == 2
    assert found.records[0]["neighbors"][0]["score"] == pytest.approx(1.0, abs=1e-5)


def torch_index(model: Path, path: Path) -> Path:
    """An index of a few texts that torch embedded in fp32 (the default backend)."""
    texts = ["Springfield zoo", "Shelbyville museum", "the old mill", "a mill by the river", "zoo"]
    built = sembed(
        "index", "-m", str(model), "-o", str(path), input=jsonl(*({"id": n, "text": t} for n, t in enumerate(texts)))
    )
    assert built.exit_code == 0, built.stderr
    assert json.loads((path / "sembed.json").read_text())["settings"]["backend"] == "torch"
    return path


QUERIES = jsonl({"text": "the mill"}, {"text": "zoo in Springfield"}, {"text": "museum"})


def test_text_queries_to_a_torch_index_run_on_onnx_with_its_neighbours(model, tmp_path, one_torch_thread):
    """Texts torch embedded in fp32 are queried on ONNX Runtime by default: the same neighbours and scores as
    --backend torch, which still asks for torch."""
    index = torch_index(model, tmp_path / "idx")
    found = sembed("search", "--index", str(index), "-k", "5", input=QUERIES)
    assert found.exit_code == 0, found.stderr
    assert sentence_models.load_onnx.cache_info().currsize == 1  # the queries' encoder
    sentence_models.load_onnx.cache_clear()
    asked = sembed("search", "--index", str(index), "-k", "5", "--backend", "torch", input=QUERIES)
    assert asked.exit_code == 0, asked.stderr
    assert sentence_models.load_onnx.cache_info().currsize == 0
    for ours, theirs in zip(found.records, asked.records, strict=True):
        assert [n["id"] for n in ours["neighbors"]] == [n["id"] for n in theirs["neighbors"]]
        np.testing.assert_allclose(
            [n["score"] for n in ours["neighbors"]], [n["score"] for n in theirs["neighbors"]], atol=2e-6
        )


def test_where_onnx_cannot_run_the_model_text_queries_go_to_torch(model, tmp_path, monkeypatch):
    """No place to write the export, or no onnxruntime: the default search answers on torch, saying why under
    -v; asked for, --backend onnx is still an error."""
    index = torch_index(model, tmp_path / "idx")
    expected = sembed("search", "--index", str(index), "-k", "3", "--backend", "torch", input=QUERIES).records
    writable = onnx_encoder.writable
    monkeypatch.setattr(onnx_encoder, "writable", lambda folder: False)
    found = sembed("search", "-v", "--index", str(index), "-k", "3", input=QUERIES)
    assert found.exit_code == 0, found.stderr
    assert found.records == expected
    assert f"the queries go to torch, not ONNX Runtime: cannot export the model at '{model}' to ONNX" in found.stderr
    asked = sembed("search", "--index", str(index), "-k", "3", "--backend", "onnx", input=QUERIES)
    assert asked.exit_code == 1 and "cannot export the model" in asked.stderr
    monkeypatch.setattr(onnx_encoder, "writable", writable)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    without = sembed("search", "--index", str(index), "-k", "3", input=QUERIES)
    assert without.exit_code == 0, without.stderr
    assert without.records == expected


def test_token_attention_is_refused_in_one_line(model):
    modules = json.loads((model / "modules.json").read_text())
    modules[1]["type"] = "sembed_cli.token_attention.TokenAttention"  # as models saved before the move
    (model / "modules.json").write_text(json.dumps(modules))
    run = sembed("embed", "--backend", "onnx", "-m", str(model), input=jsonl({"text": "a"}))
    assert run.exit_code == 1 and run.stdout == ""
    assert run.stderr == (
        f"error: --backend onnx cannot run Token Attention pooling (TA-SBERT) of the model at "
        f"'{model}' outside torch (hint: use --backend torch for this model)\n"
    )


def test_without_the_extra_onnx_is_one_line_naming_it(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    run = sembed("embed", "--backend", "onnx", "-m", str(model), input=jsonl({"text": "a"}))
    assert run.exit_code == 1 and run.stdout == ""
    assert run.stderr == (
        "error: --backend onnx needs onnxruntime, which is not installed (hint: pip install "
        "'sembed[onnx]' (onnxruntime and onnx), or use --backend torch)\n"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--quantize", "int8"], "Invalid value for '--quantize': only with --backend onnx"),
        (
            ["--backend", "onnx", "--device", "cuda"],
            "Invalid value for '--device': --backend onnx runs on the CPU: use --device cpu (or auto)",
        ),
        (
            ["--backend", "onnx", "--precision", "fp16"],
            "Invalid value for '--precision': --backend onnx computes in fp32 (or int8 with --quantize int8)",
        ),
        (
            ["--backend", "onnx", "--explain"],
            "Invalid value for '--backend': only for the sentence vectors of "
            "--method model (not --words, --explain, --plain)",
        ),
        (["--backend", "tensorflow"], "Invalid value for '--backend'"),
    ],
)
def test_usage_errors(args, message):
    run = sembed("embed", *args, input=jsonl({"text": "a"}))
    assert run.exit_code == 2 and run.stdout == ""
    assert message in " ".join(run.stderr.split())


# --- quality on the real model (e2e) ------------------------------------------------------------------------


STSB_TEST_SPEARMAN = 82.03  # torch fp32, all-MiniLM-L6-v2 (bench/embed_speed.py, README)
# int8 (ONNX Runtime dynamic quantisation) as measured on each instruction set's CPU (the config and ONNX Runtime's
# kernels both follow it); the bar, checked on every CPU: within 0.3 of fp32. int8 vectors depend a little on
# the batches (activation ranges are per batch): these are `sembed embed`'s.
# Windows start small (issue 41.5), so the first --batch-size records are embedded in smaller batches than before:
# re-measured on AVX-512 VNNI (AMD EPYC, 2026-11-27; 82.25 / 77.09 with whole windows). The AVX2 figures (82.24 /
# 77.09, AMD EPYC AVX2 + FMA) were measured with whole windows: re-measure there and pin them again; until then
# AVX2 is held to the 0.3 bar alone.
INT8_SPEARMAN = {
    "avx512_vnni": {"stsb": 82.16, "sick": 77.04},
}
FP32_SPEARMAN = {"stsb": 82.03, "sick": 77.15}


def spearman(run) -> float:
    assert run.exit_code == 0, run.stderr
    return json.loads(run.stdout)["spearman"]


def sts_pipeline(kind: str, path: Path, *embed_args: str) -> float:
    pairs = sembed("convert", "-q", "--from", kind, str(path))
    assert pairs.exit_code == 0, pairs.stderr
    embedded = sembed("embed", "-q", *embed_args, input=pairs.stdout)
    assert embedded.exit_code == 0, embedded.stderr
    return spearman(sembed("eval", "sts", "-q", input=embedded.stdout))


@pytest.mark.slow
@pytest.mark.e2e
def test_fp32_onnx_equals_torch_on_stsb_test(monkeypatch, data_dir):
    monkeypatch.delenv("SEMBED_CACHE")  # the packaged model's own onnx/ folder, reused as users reuse it
    assert sts_pipeline("stsb", data_dir / "stsb" / "sts-test.csv", "--backend", "onnx") == pytest.approx(
        STSB_TEST_SPEARMAN, abs=0.01
    )


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("kind, path", [("stsb", "stsb/sts-test.csv"), ("sick", "sick/SICK_test_annotated.txt")])
def test_int8_stays_within_0_3_of_fp32_on_this_cpu(kind, path, monkeypatch, data_dir, record_property):
    """Runs on whichever CPU CI has (the instruction set it ran on is in the report's properties and on stdout); the
    exact figure is pinned where one was measured on that instruction set."""
    monkeypatch.delenv("SEMBED_CACHE")
    isa = onnx_encoder.cpu_instruction_set()
    record_property("instruction_set", isa)
    print(f"int8 quality checked on {isa}")
    int8 = sts_pipeline(kind, data_dir / path, "--backend", "onnx", "--quantize", "int8")
    assert abs(FP32_SPEARMAN[kind] - int8) <= 0.3, f"{isa}: {int8} against fp32's {FP32_SPEARMAN[kind]}"
    if isa in INT8_SPEARMAN:
        assert int8 == pytest.approx(INT8_SPEARMAN[isa][kind], abs=0.01)


def test_long_texts_with_onnx_are_counted_and_windowed_as_with_torch(model, one_torch_thread):
    """--long-text reads the ONNX encoder's own tokenizer (tokenizers, no torch): the same count, the same windows."""
    long = "word " * 100  # past the tiny model's 64-token window
    records = jsonl({"text": "Dogs bark.", "id": 1}, {"text": long, "id": 2})
    for policy in ("truncate", "window"):
        onnx = sembed("embed", "--backend", "onnx", "--long-text", policy, "-m", str(model), input=records)
        torch = sembed("embed", "--long-text", policy, "-m", str(model), input=records)
        assert onnx.exit_code == torch.exit_code == 0, onnx.stderr
        assert onnx.stderr == torch.stderr and "1 text(s) longer than the model's 64-token window" in onnx.stderr
        for mine, theirs in zip(onnx.records, torch.records):
            np.testing.assert_allclose(mine["embedding"], theirs["embedding"], atol=2e-6)
    refused = sembed("embed", "--backend", "onnx", "--long-text", "error", "-m", str(model), input=records)
    assert refused.exit_code == 1 and [r["id"] for r in refused.records] == [1]
    assert refused.stderr == (
        "error: <stdin>:2: 'text' is 102 tokens, longer than the model's 64-token window "
        "(hint: --long-text truncate or window embeds it)\n"
    )


@pytest.mark.subprocess
def test_the_python_api_searches_an_int8_index_as_the_command_does_without_torch(model, tmp_path, one_torch_thread):
    """api.search embeds queries with the index's recorded backend and quantization (no torch imported), gives
    the command's scores and each hit's stored payload."""
    texts = ["Springfield zoo", "Shelbyville museum", "the old mill", "a mill by the river"]
    docs = [{"id": n, "text": t, "doc_id": f"doc{n % 2}.txt"} for n, t in enumerate(texts)]
    idx = tmp_path / "idx"
    args = ("index", "--backend", "onnx", "--quantize", "int8", "-m", str(model), "-o", str(idx))
    built = sembed(*args, input=jsonl(*docs))
    assert built.exit_code == 0, built.stderr
    command = sembed("search", "--index", str(idx), "-k", "3", "--payload", input=jsonl({"text": "the old mill"}))
    assert command.exit_code == 0, command.stderr
    probe = (
        "import json, sys\nimport sembed_cli as sembed\n"
        "print(json.dumps(sembed.search(sys.argv[1], ['the old mill'], k=3)))\n"
        f"print('IMPORTED', [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)\n"
    )
    env = {
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": "1",
        "SEMBED_CACHE": str(tmp_path / "cache"),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run([sys.executable, "-c", probe, str(idx)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "IMPORTED []" in done.stderr
    [hits] = json.loads(done.stdout)
    theirs = command.records[0]["neighbors"]
    assert [hit["id"] for hit in hits] == [hit["id"] for hit in theirs]
    assert np.allclose([hit["score"] for hit in hits], [hit["score"] for hit in theirs], rtol=0, atol=1e-6)
    assert [hit["payload"] for hit in hits] == [hit["payload"] for hit in theirs]
    assert hits[0]["payload"]["doc_id"] == "doc0.txt"
