"""Is a name a point of interest by its nearest labelled names: `sembed taste --neighbours`.

The POI paper's own route for English names (Zhang et al., section 5): a k-NN vote over an index of labelled names
(`NeighbourVote`), averaged over each index given, mixed with a regression over character n-grams of the same names
(`ngram_classifier`): poi_score = W poi_vote + (1 - W) poi_ngram (`Identification`). The defaults were chosen on
dev records only; their figures are in the docs (POI results).

No torch here: the command's defaults come from this module, and `sembed --help` must stay instant.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .directory import VectorIndex
    from .query_encoder import QueryEmbedder

DEFAULT_VOTE_K = 20  # labelled neighbours a vote counts
DEFAULT_VOTE_POWER = 4.0  # a neighbour weighs its cosine to this power: the closest names decide


def default_vote_weight(indexes: int) -> float:
    """W of poi_score by the number of --neighbours indexes: a second index (an English sentence encoder's) earns
    its vote a larger share."""
    return 0.3 if indexes == 1 else 0.5


@dataclass(frozen=True)
class VoteSettings:
    """How `taste --neighbours` votes: k neighbours, each weighing cosine^power; poi_score's weight W of the vote
    (None: `default_vote_weight` of the number of indexes)."""

    k: int = DEFAULT_VOTE_K
    power: float = DEFAULT_VOTE_POWER
    weight: float | None = None


# The vote's HNSW search breadth, wider than `search`'s (kinds.HNSW_EF_SEARCH, 64): on the POI run's
# 350,205 labelled records (k = 20, p = 4), test F0.5 0.888 at 64, 0.890 at 128, 0.891 exact; 1,236 searches/s
# at 128 against 2,424 at 64, and the taste beside it is slower than either (README, POI).
VOTE_EF_SEARCH = 128


class NeighbourVote:
    """Is a name a POI by its nearest labelled names: the POI paper's own route for English names.

    Zhang et al. (section 5) on their English data set: "compare the embedding of this string with those POI
    embeddings". Here the labelled names are a `sembed index` (built with the stage-2 model) whose records carry
    is_poi; a text's vote is the weighted share of POI names among its k nearest indexed names,
    sum_i w_i y_i / sum_i w_i with w_i = max(s_i, 0)^p (s_i: cosine, y_i: 1 for a POI), in [0, 1]: p = 1 weighs
    by similarity, a larger p lets the closest names decide.
    """

    def __init__(self, index: VectorIndex, encoder: QueryEmbedder, k: int, power: float, label_key: str = "is_poi"):
        import numpy as np

        from ..errors import SembedError

        labels = np.zeros(index.row_count, dtype=np.float64)  # by row number (rows an update removed: never found)
        for row, _, payload in index.rows():
            label = payload.get(label_key)
            if not isinstance(label, bool):
                raise SembedError(
                    f"the index at '{index.path}' is not of labelled names: every record needs "
                    f"{label_key} true or false",
                    "index records of sembed convert --from gazetteer",
                )
            labels[row] = label
        if not index.count:
            raise SembedError(
                f"the index at '{index.path}' is empty", "index records of sembed convert --from gazetteer"
            )
        self.index, self.encoder, self.k, self.power = index, encoder, min(k, index.count), power
        self.labels = labels

    def vote(self, texts: list[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        vectors = self.encoder.encode(texts)
        scores, rows = self.index.search(np.asarray(vectors, dtype=np.float32), self.k, ef_search=VOTE_EF_SEARCH)
        return [round(float(v), 6) for v in weighted_share(scores, rows, self.labels, self.power)]


class Identification:
    """`taste --neighbours`' verdict on names: the paper's vote (NeighbourVote; over each index given, averaged),
    the regression over character n-grams of the same labelled names (ngram_classifier.NgramClassifier), and their
    mix, poi_score = w poi_vote + (1 - w) poi_ngram."""

    def __init__(self, voters: list[NeighbourVote], regression, weight: float):
        self.voters, self.regression, self.weight = voters, regression, weight

    def judge(self, texts: list[str]) -> list[tuple[float, float, float]]:
        """(poi_vote, poi_ngram, poi_score) of each text."""
        import numpy as np

        votes = np.mean([voter.vote(texts) for voter in self.voters], axis=0)
        ngrams = self.regression.probability(texts)
        return [
            (
                round(float(vote), 6),
                round(float(ngram), 6),
                round(self.weight * float(vote) + (1 - self.weight) * float(ngram), 6),
            )
            for vote, ngram in zip(votes, ngrams)
        ]


def weighted_share(scores, rows, labels, power: float):
    """Each query's vote from its neighbours' cosines `scores` and `rows` (-1: none found) of the 0/1 `labels`:
    sum_i w_i y_i / sum_i w_i, w_i = max(s_i, 0)^power (NeighbourVote)."""
    import numpy as np

    weights = np.where(rows >= 0, np.clip(scores, 0.0, None) ** power, 0.0) + 1e-9
    return (weights * labels[np.maximum(rows, 0)]).sum(1) / weights.sum(1)


@contextmanager
def opened_identification(
    directories: Sequence[Path], device: str, settings: VoteSettings = VoteSettings()
) -> Iterator[Identification]:
    """The `Identification` over the labelled-name indexes at `directories` (open until the block ends), each
    index's names embedded as its own were: its model, backend and quantization. The n-gram regression is the
    first index's (saved with it, else fitted now)."""
    from ..errors import SembedError
    from ..models import ngram_classifier
    from .directory import VectorIndex
    from .query_encoder import QueryEmbedder, index_backend

    with ExitStack() as opened:
        voters = []
        for directory in directories:
            labelled = opened.enter_context(VectorIndex.load(directory))
            encoder = QueryEmbedder(labelled, None, device, "truncate", *index_backend(labelled))
            encoder.open()
            voters.append(NeighbourVote(labelled, encoder, settings.k, settings.power))
        regression = ngram_classifier.for_index(voters[0].index)
        if regression is None:
            raise SembedError(
                f"the index at '{directories[0]}' holds names of one kind only: telling POI names from "
                f"others needs both",
                "index train records of sembed convert --from gazetteer, POI and non-POI",
            )
        weight = default_vote_weight(len(voters)) if settings.weight is None else settings.weight
        yield Identification(voters, regression, weight)
