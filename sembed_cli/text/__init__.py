"""Text processing: the spaCy pipeline, dependency triples and S_cf, base forms, structural sets, name variants.

The record functions of `parse`, `spo` and `normalize` live here, beside what they compute
(`dependency.parse_records`, `component_focus.spo_records`, `base_form.normalize_records`).
Importable without typer; nothing here loads a model or imports `models/` (the layer above): the structural
sets ask a masked-LM for words through `structural_sets.MaskFiller`, which `models/masked_lm.MaskedLM` fills.
"""
