"""Arm Corstone FVPs as hil targets: the pieces FvpTarget (hil/targets/fvp.py) is made of.

platforms  binary names and parameter spellings of the Corstone-300 and -320 FVPs
config     a device file's connection section, checked (NPU MACs agree with the recipes)
locate     finding the FVP binary and the ExecuTorch install its runner links
command    the FVP command line, and the semihosting command-line limit
process    one running FVP: pty output, log file, start-up classification, gentle stop
output     reading the FVP's output: banner, terminal port, stop reasons, licence, --stat
pmu        the runner's Ethos-U PMU report lines, summed per execution into counters
errors     the FVP branches of hil's error tree
"""
