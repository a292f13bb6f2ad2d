"""The int8 quantisation configs of `--quantize int8` against each other on this CPU: CPU seconds, interleaved.

Quantises the packaged all-MiniLM-L6-v2's fp32 ONNX export (made by `sembed
embed --backend onnx` where missing) with signed per-channel weights, 8-bit
(sembed's earlier avx512 / avx512_vnni config) and 7-bit (reduce_range: the
config of every x86 instruction set now), into a temporary folder, then runs
ONNX Runtime sessions of both at one thread over the same STS-B train
sentences (batches of 32, sorted by length, as `embed` does), alternating
which goes first, --rounds times. CPU seconds of the process are the figure
(steady on a machine shared with other jobs); wall seconds and the load
average are recorded beside them. Issue 29: the 7-bit config must stay within
10% of the earlier speed. Quality: tests/test_onnx.py and the README.

    python bench/int8_configs.py [--rounds 4] [--sentences 3000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from common import cpu_description, log, save
from embed_speed import stsb_train_sentences

from sembed_cli.models import onnx_encoder, sentence_models

CONFIGS = {"8-bit": False, "7-bit": True}  # reduce_range


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sentences", type=int, default=3000)
    args = parser.parse_args()
    from onnxruntime import InferenceSession
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32_encoder = sentence_models.load_onnx(sentence_models.DEFAULT_MODEL)  # the fp32 export, made where missing
    pipeline, fp32 = fp32_encoder.pipeline, fp32_encoder.path
    tokenizer = onnx_encoder.fast_tokenizer(pipeline)
    texts = stsb_train_sentences()[: args.sentences]
    order = np.argsort([-len(text) for text in texts], kind="stable")
    batches = []
    for start in range(0, len(texts), 32):
        encodings = tokenizer.encode_batch([texts[i] for i in order[start : start + 32]])
        batches.append(
            {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
        )
    described = {
        **cpu_description(),
        "instruction_set": onnx_encoder.cpu_instruction_set(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    runs: dict[str, list[dict]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory() as tmp:
        sessions = {}
        for name, reduce_range in CONFIGS.items():
            path = Path(tmp) / f"{name}.onnx"
            quantize_dynamic(
                str(fp32),
                str(path),
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=reduce_range,
                op_types_to_quantize=["MatMul", "Attention"],
            )
            sessions[name] = InferenceSession(
                str(path), onnx_encoder.session_options(1), providers=["CPUExecutionProvider"]
            )
        for round_ in range(args.rounds):
            for name in list(CONFIGS)[:: 1 if round_ % 2 == 0 else -1]:
                session = sessions[name]
                inputs = [i.name for i in session.get_inputs()]
                cpu, wall = time.process_time(), time.perf_counter()
                for batch in batches:
                    session.run(None, {key: batch[key] for key in inputs})
                result = {
                    "cpu_s": round(time.process_time() - cpu, 3),
                    "wall_s": round(time.perf_counter() - wall, 3),
                    "load_average": round(os.getloadavg()[0], 2),
                }
                runs[name].append(result)
                log(
                    f"round {round_ + 1} {name}: {result['cpu_s']} CPU s, {result['wall_s']} s, "
                    f"load {result['load_average']}"
                )
    medians = {name: float(np.median([r["cpu_s"] for r in results])) for name, results in runs.items()}
    ratio = medians["8-bit"] / medians["7-bit"]
    log(
        f"median CPU seconds: 8-bit {medians['8-bit']:.2f}, 7-bit {medians['7-bit']:.2f} "
        f"(7-bit at {ratio:.2f}x the 8-bit speed; aim >= 0.9)"
    )
    save(
        "int8_configs",
        {
            "sentences": len(texts),
            "threads": 1,
            **described,
            "median_cpu_s": medians,
            "speed_ratio_7bit_to_8bit": round(ratio, 3),
            "aim": 0.9,
            "runs": runs,
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
    )


if __name__ == "__main__":
    main()
