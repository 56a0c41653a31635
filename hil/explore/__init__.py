"""`hil explore`: a case's .pte in Google's Model Explorer, with hil's own data drawn over it.

The data path, one module per step:

    cases / source     the case's artifact from the cache (exported now if need be), or a .pte
    program            the .pte's instructions and delegate calls (ExecuTorch's deserializer)
    tosa_graph         each kept delegate graph (delegates/delegate_N/out.tosa)
    vela_layers        Vela again on each graph: its per-layer estimate, by TOSA operator
    delegates          which graph belongs to which call (exact command stream), adapter order
    viewer             the viewer's own venv (installed on first use) and the conversion
    overlays           partition marks, Vela cycles, per-node errors (node_errors) as node data
    server             Model Explorer on 127.0.0.1 only; the page URL with models and overlays
    command            the `hil explore` subcommand

Everything but `viewer_side.py` runs in hil's venv; that one file runs in the viewer's.
"""
