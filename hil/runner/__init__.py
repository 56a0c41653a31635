"""The runner protocol (firmware/PROTOCOL.md): framing, messages and a client over any Link."""
