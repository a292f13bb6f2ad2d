"""The old path of the Token Attention module, kept because saved TA-SBERT models name it.

Every TA-SBERT model `sembed train --method ta` saved before the module moved to `sembed_cli/models/` names
`sembed_cli.token_attention.TokenAttention` (and `.TokenReconstruction`) in its `modules.json`;
sentence-transformers imports those paths to load it (as its own `deprecated_import.py` keeps old module paths).
"""

from .models.token_attention import TokenAttention, TokenReconstruction

__all__ = ["TokenAttention", "TokenReconstruction"]
