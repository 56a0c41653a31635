"""Where a runner lives and how to reach it: boards on ports, runner processes on ptys, QEMU,
FVP processes, logins over SSH. Resources hold how to reach a runner and what it logged; the
runner driver (hil.runner.driver) speaks the protocol over the link they give, and a target
(hil.targets) composes the two."""
