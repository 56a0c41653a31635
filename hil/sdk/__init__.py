"""ExecuTorch for a board, built from the user's checkouts: `hil sdk build`.

sources   the trees (ExecuTorch, CMSIS-NN, Ethos-U driver, CMSIS) and every missing piece
boards    the CPU and NPU an SDK is built for, and the firmware presets it serves
kernels   the operators to register, from the programs' own operator tables
identity  a tree's content digest, remembered beside its listing
plan      the CMake invocations and the key that names the SDK (pure: no compiler runs)
build     runs a plan into .hil/sdk/<board>-<key>/, with progress and a kept log
store     finished SDKs, how a runner build finds one (EXECUTORCH_ROOT still wins), and the
          `hil sdk build` line that makes a missing one

The command line itself is hil.sdk_command, above the session.
"""
