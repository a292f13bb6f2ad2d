"""Models and what runs them: sentence encoders (torch and ONNX), pooling, word vectors and salience, the taste
test and masked-LM loading, the vector index, and the identity that ties every vector to the model that made it.

Importable without typer; torch and friends are imported inside the functions that need them.
"""
