pytest_plugins = ["tests.fixtures.fake_nvml.plugin", "tests.fixtures.k8s"]
