"""Models and what runs them: sentence encoders (torch and ONNX), pooling, word vectors and salience, the taste
test, masked-LM loading and its whole-word candidates, and the identity that ties every vector to the model that
made it.

Importable without typer; torch and friends are imported inside the functions that need them.
"""
