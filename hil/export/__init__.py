"""The export steps the reference and every recipe share: torch.export, PT2E quantization,
output scales, serialization, a device file's annotation passes by name. Below both, so the
quantized model the verdict compares with and the program a backend lowers are made by the same
code."""
