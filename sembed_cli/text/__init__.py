"""Text processing: the spaCy pipeline, dependency triples and S_cf, base forms, structural sets, name variants.

Importable without typer; nothing here loads a neural sentence encoder.
"""
