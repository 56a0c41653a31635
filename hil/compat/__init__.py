"""Where the ExecuTorch versions hil supports differ, asked as capabilities, one concern per
module: a version string is read only to name the version in words (hil.compat.versions).

    versions      the supported range, the installed torch and ExecuTorch (a source
                  checkout's commit included), the sentence that says whether they fit
    vela          what ExecuTorch's vela_compile returns (bytes, or a result with blocks)
    cortex_m      the to_edge configuration the Cortex-M backend requires
    runtime       what an installed ExecuTorch offers a program built outside Python (the
                  posix runner's CMake package)

The table of what differs is docs/compatibility.md.
"""
