"""Training, one module per method, importable without typer.

- `methods`: the registry of `sembed train --method`: each method's recipe,
  settings (its options, with their defaults) and `run`, without torch.
- `scored_pairs`: reading and checking pairs with a gold score (sbert, cf).
- `siamese`: SBERT and CF-BERT fine-tuning, with the CF-BERT loss.
- `sentence_trainer`: fine-tuning a sentence-transformers model under
  sembed's rules (progress on stderr, checkpoints, --resume, seed, device),
  on the sentence-transformers trainer, so `torchrun`/`accelerate` work.
- `checkpoints`: where checkpoints live and how a run is resumed.
"""
