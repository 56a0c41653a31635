"""Lab racks through labgrid: boards leased from a coordinator's places, power, a virtual rack.

settings.py      connection.labgrid keys of a device file
client.py        LabClient: labgrid's ClientSession on a thread of its own
lease.py         reserve, wait, acquire, release
stale.py         taking back places a hard-killed process left acquired
resources.py     a place's resources -> the inner kind's connection keys
power.py         on/off/cycle through labgrid's power drivers
open_target.py   a device file -> its target, leased when it names a place
target.py        LabTarget: the inner target on a leased board, power cycles, board swaps
virtual_rack.py  a real coordinator, exporters and ser2net serving virtual boards
virtual_board.py one virtual board: the host runner on a pty, with a power switch
"""
