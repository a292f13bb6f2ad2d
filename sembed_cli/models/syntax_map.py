"""The syntactic transformation f of the syntax-distillation paper, as a directory that `embed --syntax-map` applies.

Syntax-distillation paper ("Unsupervised Distillation of Syntactic Information
from Contextualized Word Representations"), section 3.3: "a single linear
layer that maps from dimensionality 2048 to 75", trained by `train --method
syntax` (training/syntax.py). The directory holds the layer's weight and bias
(`map.safetensors`), the description of the word encoder it was trained on
(`contextual_words.WordEncoder.describe()`: the map only means something on
vectors from that encoder), and `sembed.json`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import SembedError
from ..io import write_json_atomic

WEIGHTS_FILE = "map.safetensors"
CONFIG_FILE = "syntax_map.json"


@dataclass
class SyntaxMap:
    """f(x) = W x + b, W in R^{m x n}; `encoder` describes the word encoder whose vectors x it takes."""

    weight: torch.Tensor  # (m, n)
    bias: torch.Tensor  # (m,)
    encoder: dict

    @property
    def dimension(self) -> int:
        return self.weight.shape[0]

    @property
    def input_dimension(self) -> int:
        return self.weight.shape[1]

    def apply(self, vectors: torch.Tensor) -> torch.Tensor:
        """(n, input_dimension) word vectors -> (n, dimension)."""
        if vectors.shape[-1] != self.input_dimension:
            raise SembedError(
                f"the syntax map takes {self.input_dimension}-d word vectors, got {vectors.shape[-1]}-d",
                "embed with the encoder the map was trained on (see its syntax_map.json)",
            )
        return torch.nn.functional.linear(vectors.float(), self.weight, self.bias)

    def save(self, directory: Path) -> None:
        from safetensors.torch import save_file

        save_file(
            {"weight": self.weight.detach().cpu().contiguous(), "bias": self.bias.detach().cpu().contiguous()},
            str(directory / WEIGHTS_FILE),
        )
        write_json_atomic(
            directory / CONFIG_FILE,
            {"dimension": self.dimension, "input_dimension": self.input_dimension, "encoder": self.encoder},
        )

    @classmethod
    def load(cls, directory: str | Path) -> SyntaxMap:
        path = Path(directory).expanduser()
        if not (path / CONFIG_FILE).exists() or not (path / WEIGHTS_FILE).exists():
            raise SembedError(
                f"no syntax map at '{directory}'", "pass a directory `sembed train --method syntax` wrote"
            )
        from safetensors.torch import load_file

        config = json.loads((path / CONFIG_FILE).read_text())
        tensors = load_file(str(path / WEIGHTS_FILE))
        return cls(tensors["weight"], tensors["bias"], config["encoder"])
