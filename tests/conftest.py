pytest_plugins = ["tests.fixtures.fake_nvml.plugin"]
