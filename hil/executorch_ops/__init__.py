"""ExecuTorch's own Arm operator tests on any hil target: `pytest -p hil.executorch_ops`.

    pytest -p hil.executorch_ops <their test files> --target=u85-ref --target=host

Their test files run unchanged: each test that builds one of their pipelines
(`TosaPipelineINT`, `EthosU85PipelineINT`, ...) runs once per given target that answers it,
its pipeline answered by hil (export through hil's recipe in the variant the test asks for,
deploy, run, hil's verdict), with their stage assertions checked on hil's lowering and their
own qtol rule computed beside hil's verdict. See docs/operator-tests.md.

    calls       what a test asked of its pipeline, as data
    pipelines   the stand-ins bound to their pipeline names during a test
    mapping     which target and recipe answer which pipeline, and the variant as options
    runner      one pipeline.run(): the check, the assertions, their rule, the record
    stages      their stage assertions on hil's lowering
    their_rule  ExecuTorch's allclose rule on the arrays hil judged
    their_program  their pipeline builds the program, hil runs and judges it
    checked     hil's ethos-u lowering with the test's own partitioner checks
    summary     the closing section: both verdicts and every difference
    plugin      the pytest hooks
"""

from hil.executorch_ops.plugin import (
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_runtest_call,
    pytest_runtestloop,
    pytest_terminal_summary,
)

__all__ = [
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_runtest_call",
    "pytest_runtestloop",
    "pytest_terminal_summary",
]
