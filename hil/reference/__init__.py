"""What the verdict compares a program with, apart from how a backend lowers it: the quantized
model (PT2E, kept in its store and served only to the model it was made from), its rounding
sensitivity, and the Arm quantizer's model. The recipes lower the quantized model they get from
here; they never change it (the reference is the model, never the backend)."""
