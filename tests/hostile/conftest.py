"""The marker of the hostile-input tests."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "open_findings: a fuzzer whose findings are open library defects; it FAILS (by design: "
        "never xfailed or skipped) until every defect it reports is fixed; its report file "
        "lists each finding with a one-line replay")
