pytest_plugins = [
    "tests.fixtures.cpu_report",
    "tests.fixtures.fake_nvml.plugin",
    "tests.fixtures.k8s",
]
