"""FVP failures, as branches of hil's one error tree (each says which class the plugin sees).

    FvpLicenceError   TargetUnavailable    the FVP refused to run for want of a licence: skip
    FvpStartError     InfrastructureError  the FVP exited or stayed silent before offering its
                                           UART (bad parameter, crash at start-up)
    FvpTimeLimit      LinkTimeout          the FVP stopped itself at its --timelimit
    FvpExited         InfrastructureError  the FVP process ended for a reason of its own

Every one carries the FVP's log path and the command line that was run, so a report can be
reproduced by hand.
"""

from __future__ import annotations

from hil.errors import InfrastructureError, LinkTimeout, TargetUnavailable


class FvpLicenceError(TargetUnavailable):
    """The FVP could not check out a licence (user-based or FlexNet licensing)."""


class FvpStartError(InfrastructureError):
    """The FVP did not come up: it exited or never offered its UART."""


class FvpTimeLimit(LinkTimeout):
    """The FVP reached its --timelimit and stopped the simulation."""


class FvpExited(InfrastructureError):
    """The FVP process ended without the runner asking it to."""


__all__ = ["FvpExited", "FvpLicenceError", "FvpStartError", "FvpTimeLimit"]
