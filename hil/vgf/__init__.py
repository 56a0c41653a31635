"""VGF programs on the Arm ML SDK for Vulkan, without a GPU that has the ML extensions.

A .pte lowered by ExecuTorch's VGF backend holds each delegate as a VGF file (the ML SDK's
model-converter output for the delegate's TOSA graph). hil runs those files as the SDK runs
them: in the SDK's scenario runner, on its ML emulation layer (which implements the
`VK_ARM_tensors` and `VK_ARM_data_graph` extensions in compute shaders), over Mesa's lavapipe
software Vulkan device, with Khronos' validation layer watching the Vulkan calls.

    environment   the tools, layers and device this needs, and the loader setup that stacks
                  them in the right order (one folder per layer manifest)
    scenario      a delegate's scenario, from the VGF library's own template (vgf_dump)
    worker        the process that holds the Vulkan device and the built scenarios
    client        hil's side of that process: requests with deadlines, typed failures
"""
